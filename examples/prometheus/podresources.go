package prometheus

import (
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/podresources"
)

var _ agent.PodResourcesMetrics = (*Metrics)(nil)

// podResourcesMetrics are the pod-resources API's series, by
// server_api_version, as upstream's kubelet counts the calls its socket
// answers.
type podResourcesMetrics struct {
	total                                       *prom.CounterVec
	list, getAllocatable, get                   *prom.CounterVec
	listErrors, getAllocatableErrors, getErrors *prom.CounterVec
}

func newPodResourcesMetrics() podResourcesMetrics {
	counter := func(name, help string) *prom.CounterVec {
		return prom.NewCounterVec(prom.CounterOpts{Name: name, Help: alpha(help)}, []string{"server_api_version"})
	}
	return podResourcesMetrics{
		total: counter("kubelet_pod_resources_endpoint_requests_total",
			"Cumulative number of requests to the PodResource endpoint. Broken down by server api version."),
		list: counter("kubelet_pod_resources_endpoint_requests_list",
			"Number of requests to the PodResource List endpoint. Broken down by server api version."),
		getAllocatable: counter("kubelet_pod_resources_endpoint_requests_get_allocatable",
			"Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version."),
		get: counter("kubelet_pod_resources_endpoint_requests_get",
			"Number of requests to the PodResource Get endpoint. Broken down by server api version."),
		listErrors: counter("kubelet_pod_resources_endpoint_errors_list",
			"Number of requests to the PodResource List endpoint which returned error. Broken down by server api version."),
		getAllocatableErrors: counter("kubelet_pod_resources_endpoint_errors_get_allocatable",
			"Number of requests to the PodResource GetAllocatableResources endpoint which returned error. Broken down by server api version."),
		getErrors: counter("kubelet_pod_resources_endpoint_errors_get",
			"Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version."),
	}
}

func (pm podResourcesMetrics) collectors() []prom.Collector {
	return []prom.Collector{pm.total, pm.list, pm.getAllocatable, pm.get, pm.listErrors, pm.getAllocatableErrors, pm.getErrors}
}

// PodResourcesRequest implements agent.PodResourcesMetrics:
// kubelet_pod_resources_endpoint_requests_total and the method's
// _requests_list, _requests_get_allocatable or _requests_get, with its
// _errors_ counter when the call failed, by server_api_version.
func (m *Metrics) PodResourcesRequest(version, method string, failed bool) {
	pm := m.podResources
	var requests, errors *prom.CounterVec
	switch method {
	case podresources.MethodList:
		requests, errors = pm.list, pm.listErrors
	case podresources.MethodGetAllocatableResources:
		requests, errors = pm.getAllocatable, pm.getAllocatableErrors
	case podresources.MethodGet:
		requests, errors = pm.get, pm.getErrors
	default:
		return
	}
	pm.total.WithLabelValues(version).Inc()
	requests.WithLabelValues(version).Inc()
	if failed {
		errors.WithLabelValues(version).Inc()
	}
}
