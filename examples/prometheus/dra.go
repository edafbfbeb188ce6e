package prometheus

import (
	"strconv"
	"sync/atomic"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"

	"github.com/kubeletkit/kubeletkit/agent"
)

var _ agent.DRAMetrics = (*Metrics)(nil)

// draDurationBuckets are upstream's DRADurationBuckets, of
// dra_operations_duration_seconds and dra_grpc_operations_duration_seconds:
// 15 from 0.1s to 40s, each the last times the same factor.
var draDurationBuckets = prom.ExponentialBucketsRange(.1, 40, 15)

// draMetrics are the DRA manager's series (upstream's DRASubsystem "dra",
// without the kubelet_ prefix).
type draMetrics struct {
	operations *prom.HistogramVec // by operation_name, is_error
	calls      *prom.HistogramVec // by driver_name, method_name, grpc_status_code
	inUse      *claimsCollector
}

func newDRAMetrics() draMetrics {
	return draMetrics{
		operations: prom.NewHistogramVec(prom.HistogramOpts{Name: "dra_operations_duration_seconds",
			Help: alpha("Latency histogram in seconds for the duration of handling all ResourceClaims referenced by a pod " +
				"when the pod starts or stops. Identified by the name of the operation (PrepareResources or " +
				"UnprepareResources) and separated by the success of the operation. The number of failed operations " +
				"is provided through the histogram's overall count."),
			Buckets: draDurationBuckets}, []string{"operation_name", "is_error"}),
		calls: prom.NewHistogramVec(prom.HistogramOpts{Name: "dra_grpc_operations_duration_seconds",
			Help: alpha("Duration in seconds of the DRA gRPC operations"), Buckets: draDurationBuckets},
			[]string{"driver_name", "method_name", "grpc_status_code"}),
		inUse: &claimsCollector{desc: prom.NewDesc("dra_resource_claims_in_use",
			alpha("The number of ResourceClaims that are currently in use on the node, by driver name (driver_name "+
				"label value) and across all drivers (special value <any> for driver_name). Note that the sum of all "+
				"by-driver counts is not the total number of in-use ResourceClaims because the same ResourceClaim "+
				"might use devices from different drivers. Instead, use the count for the <any> driver_name."),
			[]string{"driver_name"}, nil)},
	}
}

func (dm draMetrics) collectors() []prom.Collector {
	return []prom.Collector{dm.operations, dm.calls, dm.inUse}
}

// ObserveDRAOperation implements agent.DRAMetrics:
// dra_operations_duration_seconds by operation_name (PrepareResources,
// UnprepareResources) and is_error ("true", "false").
func (m *Metrics) ObserveDRAOperation(operation string, d time.Duration, err error) {
	m.dra.operations.WithLabelValues(operation, strconv.FormatBool(err != nil)).Observe(d.Seconds())
}

// ObserveDRACall implements agent.DRAMetrics:
// dra_grpc_operations_duration_seconds by driver_name, method_name (the
// call's full gRPC method,
// "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources" ...)
// and grpc_status_code (the code's name: "OK", "DeadlineExceeded" ...).
func (m *Metrics) ObserveDRACall(driver, method string, code codes.Code, d time.Duration) {
	m.dra.calls.WithLabelValues(driver, method, code.String()).Observe(d.Seconds())
}

// CountDRAClaims implements agent.DRAMetrics: dra_resource_claims_in_use
// is count's result at every scrape (none before it is given). A later
// call replaces an earlier one: one agent per Metrics.
func (m *Metrics) CountDRAClaims(count func() map[string]int) {
	m.dra.inUse.count.Store(&count)
}

// claimsCollector is dra_resource_claims_in_use, read at scrape time.
type claimsCollector struct {
	desc  *prom.Desc
	count atomic.Pointer[func() map[string]int]
}

var _ prom.Collector = (*claimsCollector)(nil)

// Describe implements prom.Collector.
func (c *claimsCollector) Describe(ch chan<- *prom.Desc) { ch <- c.desc }

// Collect implements prom.Collector: a series for each driver with a
// claim in use and one for "<any>" (dra.AnyDriver), 0 when none is, as
// upstream's: a driver whose claims are all gone has no series.
func (c *claimsCollector) Collect(ch chan<- prom.Metric) {
	count := c.count.Load()
	if count == nil {
		return
	}
	for driver, n := range (*count)() {
		ch <- prom.MustNewConstMetric(c.desc, prom.GaugeValue, float64(n), driver)
	}
}
