package prometheus_test

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/podresources"
)

// podResourcesSeries are upstream's kubelet_pod_resources_endpoint_*
// counters (pkg/kubelet/metrics), each by server_api_version.
var podResourcesSeries = map[string]upstream{
	"kubelet_pod_resources_endpoint_requests_total": {typ: dto.MetricType_COUNTER, labels: []string{"server_api_version"},
		help: "[ALPHA] Cumulative number of requests to the PodResource endpoint. Broken down by server api version."},
	"kubelet_pod_resources_endpoint_requests_list": {typ: dto.MetricType_COUNTER, labels: []string{"server_api_version"},
		help: "[ALPHA] Number of requests to the PodResource List endpoint. Broken down by server api version."},
	"kubelet_pod_resources_endpoint_requests_get_allocatable": {typ: dto.MetricType_COUNTER, labels: []string{"server_api_version"},
		help: "[ALPHA] Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version."},
	"kubelet_pod_resources_endpoint_requests_get": {typ: dto.MetricType_COUNTER, labels: []string{"server_api_version"},
		help: "[ALPHA] Number of requests to the PodResource Get endpoint. Broken down by server api version."},
	"kubelet_pod_resources_endpoint_errors_get": {typ: dto.MetricType_COUNTER, labels: []string{"server_api_version"},
		help: "[ALPHA] Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version."},
}

// Each call the pod-resources API answered is counted under its method and
// in the total, by version; a failed one also as an error. The series
// appear once counted, as upstream's.
func TestPodResourcesMetrics(t *testing.T) {
	m := newMetrics(t)
	all := expose(t, m.Handler())
	for name := range podResourcesSeries {
		assert.Nil(t, all[name], "%s before any call", name)
	}
	m.PodResourcesRequest(podresources.VersionV1, podresources.MethodList, false)
	m.PodResourcesRequest(podresources.VersionV1alpha1, podresources.MethodList, false)
	m.PodResourcesRequest(podresources.VersionV1, podresources.MethodGetAllocatableResources, false)
	m.PodResourcesRequest(podresources.VersionV1, podresources.MethodGet, false)
	m.PodResourcesRequest(podresources.VersionV1, podresources.MethodGet, true)
	all = expose(t, m.Handler())
	for name, want := range podResourcesSeries {
		checkSeries(t, name, all[name], want)
	}
	count := func(name, version string) float64 {
		for _, s := range all[name].GetMetric() {
			if s.GetLabel()[0].GetValue() == version {
				return s.GetCounter().GetValue()
			}
		}
		return -1
	}
	assert.Equal(t, 4.0, count("kubelet_pod_resources_endpoint_requests_total", "v1"))
	assert.Equal(t, 1.0, count("kubelet_pod_resources_endpoint_requests_total", "v1alpha1"))
	assert.Equal(t, 1.0, count("kubelet_pod_resources_endpoint_requests_list", "v1"))
	assert.Equal(t, 1.0, count("kubelet_pod_resources_endpoint_requests_list", "v1alpha1"))
	assert.Equal(t, 2.0, count("kubelet_pod_resources_endpoint_requests_get", "v1"))
	assert.Equal(t, 1.0, count("kubelet_pod_resources_endpoint_errors_get", "v1"))
	assert.Nil(t, all["kubelet_pod_resources_endpoint_errors_list"], "no List failed")
}
