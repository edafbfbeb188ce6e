package prometheus_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
	"github.com/kubeletkit/kubeletkit/pluginmanager/pluginmanagertest"
)

// draBuckets are upstream's DRADurationBuckets, ExponentialBucketsRange(.1,
// 40, 15), as served.
var draBuckets = []float64{0.1, 0.1534127404634391, 0.23535468936502524, 0.36106407876409946, 0.5539182980610752,
	0.849781240983936, 1.303672689737678, 1.9999999999999993, 3.0682548092687805, 4.7070937873005025,
	7.221281575281985, 11.078365961221499, 16.995624819678714, 26.07345379475354, 39.99999999999997}

// draSeries are upstream's DRA series (pkg/kubelet/metrics:
// DRAOperationsDuration, DRAGRPCOperationsDuration,
// DRAResourceClaimsInUseDesc), all ALPHA.
var draSeries = map[string]upstream{
	"dra_operations_duration_seconds": {typ: dto.MetricType_HISTOGRAM,
		help:   "[ALPHA] Latency histogram in seconds for the duration of handling all ResourceClaims referenced by a pod when the pod starts or stops. Identified by the name of the operation (PrepareResources or UnprepareResources) and separated by the success of the operation. The number of failed operations is provided through the histogram's overall count.",
		labels: []string{"is_error", "operation_name"}, buckets: draBuckets},
	"dra_grpc_operations_duration_seconds": {typ: dto.MetricType_HISTOGRAM,
		help:   "[ALPHA] Duration in seconds of the DRA gRPC operations",
		labels: []string{"driver_name", "grpc_status_code", "method_name"}, buckets: draBuckets},
	"dra_resource_claims_in_use": {typ: dto.MetricType_GAUGE,
		help:   "[ALPHA] The number of ResourceClaims that are currently in use on the node, by driver name (driver_name label value) and across all drivers (special value <any> for driver_name). Note that the sum of all by-driver counts is not the total number of in-use ResourceClaims because the same ResourceClaim might use devices from different drivers. Instead, use the count for the <any> driver_name.",
		labels: []string{"driver_name"}},
}

// The DRA hooks are served under upstream's names, help texts, labels and
// buckets: an operation's is_error is "true" or "false", a call's
// grpc_status_code the code's name; the claims in use are read at each
// scrape, "<any>" among them.
func TestDRAMetricsExposition(t *testing.T) {
	m := newMetrics(t)
	assert.NotContains(t, expose(t, m.Handler()), "dra_resource_claims_in_use", "no series before CountDRAClaims")

	counts := map[string]int{dra.AnyDriver: 1, "gpu.example.com": 1, "nic.example.com": 1}
	m.CountDRAClaims(func() map[string]int { return counts })
	m.ObserveDRAOperation(dra.OpPrepareResources, 300*time.Millisecond, nil)
	m.ObserveDRAOperation(dra.OpPrepareResources, 0, errors.New("DRA driver gpu.example.com is not registered"))
	m.ObserveDRAOperation(dra.OpUnprepareResources, 50*time.Millisecond, nil)
	m.ObserveDRACall("gpu.example.com", drav1.DRAPlugin_NodePrepareResources_FullMethodName, codes.OK, 200*time.Millisecond)
	m.ObserveDRACall("gpu.example.com", drav1.DRAPlugin_NodeUnprepareResources_FullMethodName, codes.DeadlineExceeded, 45*time.Second)

	all := expose(t, m.Handler())
	for name, want := range draSeries {
		checkSeries(t, name, all[name], want)
	}
	assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP dra_resource_claims_in_use `+draSeries["dra_resource_claims_in_use"].help+`
# TYPE dra_resource_claims_in_use gauge
dra_resource_claims_in_use{driver_name="<any>"} 1
dra_resource_claims_in_use{driver_name="gpu.example.com"} 1
dra_resource_claims_in_use{driver_name="nic.example.com"} 1
`), "dra_resource_claims_in_use"))

	for _, tt := range []struct {
		name   string
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{"dra_operations_duration_seconds", map[string]string{"operation_name": "PrepareResources", "is_error": "false"}, 1, 0.3},
		{"dra_operations_duration_seconds", map[string]string{"operation_name": "PrepareResources", "is_error": "true"}, 1, 0},
		{"dra_operations_duration_seconds", map[string]string{"operation_name": "UnprepareResources", "is_error": "false"}, 1, 0.05},
		{"dra_grpc_operations_duration_seconds", map[string]string{"driver_name": "gpu.example.com",
			"method_name": "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources", "grpc_status_code": "OK"}, 1, 0.2},
		{"dra_grpc_operations_duration_seconds", map[string]string{"driver_name": "gpu.example.com",
			"method_name": "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources", "grpc_status_code": "DeadlineExceeded"}, 1, 45},
	} {
		n, sum := histogram(t, m.Registry(), tt.name, tt.labels)
		assert.Equal(t, tt.count, n, "%s %v", tt.name, tt.labels)
		assert.InDelta(t, tt.sum, sum, 1e-9, "%s %v", tt.name, tt.labels)
	}

	counts = map[string]int{dra.AnyDriver: 0}
	assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP dra_resource_claims_in_use `+draSeries["dra_resource_claims_in_use"].help+`
# TYPE dra_resource_claims_in_use gauge
dra_resource_claims_in_use{driver_name="<any>"} 0
`), "dra_resource_claims_in_use"), "read at every scrape: the drivers' series go")
}

// serveOutside serves on a unix socket at path until the test ends, from a
// goroutine outside the test's synctest bubble (a server blocked in accept
// is never durably blocked, so inside one it would keep the node from
// settling).
func serveOutside(t *testing.T, path string, serve func(ctx context.Context, l net.Listener) error) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
}

// A whole node (agent/agenttest) with two DRA drivers' kubelet plugins
// registered, running a pod whose claim has a device of each, serves what
// upstream's e2e_node DRA spec "must provide metrics" reads: exactly
// dra_resource_claims_in_use{driver_name="<any>"} 1 and 1 for each driver
// while the pod runs, and only "<any>" at 0 once it is gone; the
// preparation, the unpreparation and each driver's calls are timed.
func TestDRAMetricsOnANode(t *testing.T) {
	root, err := os.MkdirTemp("", "kk") // short: socket paths have at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	drivers := []string{"gpu.example.com", "nic.example.com"}
	for _, d := range drivers {
		registrar := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: d,
			Endpoint: filepath.Join(root, "plugins", d, "dra.sock"), SupportedVersions: dra.Services})
		serveOutside(t, filepath.Join(root, "plugins_registry", d+"-reg.sock"), registrar.ServeListener)
	}

	synctest.Test(t, func(t *testing.T) {
		var plugins []*dratest.Plugin
		for _, d := range drivers {
			p, err := dratest.Start(dratest.Options{Driver: d, Endpoint: filepath.Join(root, "plugins", d, "dra.sock"), InMemory: true})
			require.NoError(t, err)
			t.Cleanup(p.Stop)
			plugins = append(plugins, p)
		}
		m := newMetrics(t)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Metrics: m, RootDir: root,
			Node: agent.NodeOptions{DRADialer: dratest.Dialer(plugins...)}}})
		const uid = types.UID("00000000-0000-4000-8000-0000000000ae")
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "external-claim", Namespace: "default", UID: "claim-uid"}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "drasleeppod", UID: uid}}
		claim.Status.Allocation = &resourcev1.AllocationResult{}
		for _, d := range drivers {
			claim.Status.Allocation.Devices.Results = append(claim.Status.Allocation.Devices.Results,
				resourcev1.DeviceRequestAllocationResult{Request: "dev", Driver: d, Pool: "node1", Device: "dev-0"})
		}
		n.SetResourceClaim(claim)
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "drasleeppod", Namespace: "default", UID: uid}, Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{{Name: "dev", ResourceClaimName: ptr.To("external-claim")}},
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "dev"}}}}}}})
		require.True(t, n.StepUntil(time.Minute, func() bool {
			p := n.Pod("default", "drasleeppod")
			return p != nil && p.Status.Phase == v1.PodRunning
		}), "pod running")

		help := draSeries["dra_resource_claims_in_use"].help
		assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP dra_resource_claims_in_use `+help+`
# TYPE dra_resource_claims_in_use gauge
dra_resource_claims_in_use{driver_name="<any>"} 1
dra_resource_claims_in_use{driver_name="gpu.example.com"} 1
dra_resource_claims_in_use{driver_name="nic.example.com"} 1
`), "dra_resource_claims_in_use"), "metrics while pod is running")
		count, _ := histogram(t, m.Registry(), "dra_operations_duration_seconds", map[string]string{"operation_name": "PrepareResources", "is_error": "false"})
		assert.Equal(t, uint64(1), count)
		for _, d := range drivers {
			count, _ := histogram(t, m.Registry(), "dra_grpc_operations_duration_seconds", map[string]string{"driver_name": d,
				"method_name": drav1.DRAPlugin_NodePrepareResources_FullMethodName, "grpc_status_code": "OK"})
			assert.Equal(t, uint64(1), count, d)
		}

		n.DeletePod("default", "drasleeppod")
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "drasleeppod") == nil }), "pod gone")
		assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP dra_resource_claims_in_use `+help+`
# TYPE dra_resource_claims_in_use gauge
dra_resource_claims_in_use{driver_name="<any>"} 0
`), "dra_resource_claims_in_use"), "metrics after deleting pod")
		count, _ = histogram(t, m.Registry(), "dra_operations_duration_seconds", map[string]string{"operation_name": "UnprepareResources", "is_error": "false"})
		assert.Equal(t, uint64(1), count)
		for _, d := range drivers {
			count, _ := histogram(t, m.Registry(), "dra_grpc_operations_duration_seconds", map[string]string{"driver_name": d,
				"method_name": drav1.DRAPlugin_NodeUnprepareResources_FullMethodName, "grpc_status_code": "OK"})
			assert.Equal(t, uint64(1), count, d)
		}
	})
}
