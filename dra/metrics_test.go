package dra_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	resourcev1 "k8s.io/api/resource/v1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
)

// operation and call are what recordingMetrics is told.
type operation struct {
	name   string
	d      time.Duration
	failed bool
}

type call struct {
	driver, method string
	code           codes.Code
	d              time.Duration
}

// recordingMetrics records the Manager's observations.
type recordingMetrics struct {
	mu    sync.Mutex
	ops   []operation
	calls []call
}

var _ dra.Metrics = (*recordingMetrics)(nil)

func (m *recordingMetrics) ObserveOperation(name string, d time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops = append(m.ops, operation{name, d, err != nil})
}

func (m *recordingMetrics) ObserveCall(driver, method string, code codes.Code, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, call{driver, method, code, d})
}

// take returns what was observed since the last take.
func (m *recordingMetrics) take() ([]operation, []call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops, calls := m.ops, m.calls
	m.ops, m.calls = nil, nil
	return ops, calls
}

// The claims in use are the prepared ones, as upstream's
// dra_resource_claims_in_use counts them: by driver, and all under
// AnyDriver, which is there at 0 when none is; a claim recorded whose
// preparation failed, or one read back from the checkpoint, does not
// count. Each PrepareResources and UnprepareResources is timed on the
// Manager's clock with whether it failed (here each claim read from the
// API takes a second), and each call to a plugin with its driver, full
// gRPC method and status code.
func TestMetrics(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	api := apiClaims(sharedClaim("gpu", "gpu.example.com"), sharedClaim("both", "gpu.example.com", "nic.example.com"),
		sharedClaim("bad", "nic.example.com"), sharedClaim("late", "gpu.example.com"))
	slowAPI := dra.ClaimsFunc(func(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
		clk.Step(time.Second)
		return api.ResourceClaim(ctx, namespace, name)
	})
	metrics := &recordingMetrics{}
	stateDir := t.TempDir()
	m, err := dra.New(dra.Options{Claims: slowAPI, StateDir: stateDir, Clock: clk, Metrics: metrics})
	require.NoError(t, err)
	t.Cleanup(m.Registry().Close)
	gpu := startPlugin(t, "gpu.example.com", nil)
	nic := startPlugin(t, "nic.example.com", []string{drav1beta1.DRAPluginService})
	nic.FailClaim("bad", "no such device")
	register(t, m, gpu, nic)
	ctx := context.Background()
	assert.Equal(t, map[string]int{dra.AnyDriver: 0}, m.ClaimsInUse(), "none yet")

	web := podWith(byName("g", "gpu"), byName("b", "both"))
	require.NoError(t, m.PrepareResources(ctx, web))
	assert.Equal(t, map[string]int{dra.AnyDriver: 2, "gpu.example.com": 2, "nic.example.com": 1}, m.ClaimsInUse(),
		"a claim of two drivers counts once under each")
	ops, calls := metrics.take()
	assert.Equal(t, []operation{{dra.OpPrepareResources, 2 * time.Second, false}}, ops)
	assert.Equal(t, []call{
		{"gpu.example.com", drav1.DRAPlugin_NodePrepareResources_FullMethodName, codes.OK, 0},
		{"nic.example.com", drav1beta1.DRAPlugin_NodePrepareResources_FullMethodName, codes.OK, 0},
	}, calls, "v1beta1's method for the plugin that speaks it")

	other := second(podWith(byName("x", "bad")))
	require.Error(t, m.PrepareResources(ctx, other))
	assert.Equal(t, map[string]int{dra.AnyDriver: 2, "gpu.example.com": 2, "nic.example.com": 1}, m.ClaimsInUse(),
		"recorded but not prepared")
	ops, calls = metrics.take()
	assert.Equal(t, []operation{{dra.OpPrepareResources, time.Second, true}}, ops)
	assert.Equal(t, []call{{"nic.example.com", drav1beta1.DRAPlugin_NodePrepareResources_FullMethodName, codes.OK, 0}}, calls,
		"a claim's error is in the answer: the call succeeded")

	gpu.Fail(dratest.NodePrepareResources, status.Error(codes.Unavailable, "restarting"))
	require.Error(t, m.PrepareResources(ctx, second(podWith(byName("l", "late")))))
	ops, calls = metrics.take()
	assert.Equal(t, []operation{{dra.OpPrepareResources, time.Second, true}}, ops)
	assert.Equal(t, []call{{"gpu.example.com", drav1.DRAPlugin_NodePrepareResources_FullMethodName, codes.Unavailable, 0}}, calls)
	gpu.Fail(dratest.NodePrepareResources, nil)

	require.NoError(t, m.UnprepareResources(ctx, web))
	assert.Equal(t, map[string]int{dra.AnyDriver: 0}, m.ClaimsInUse(), "only the prepared claims' drivers")
	ops, calls = metrics.take()
	assert.Equal(t, []operation{{dra.OpUnprepareResources, 0, false}}, ops)
	assert.Equal(t, []call{
		{"gpu.example.com", drav1.DRAPlugin_NodeUnprepareResources_FullMethodName, codes.OK, 0},
		{"nic.example.com", drav1beta1.DRAPlugin_NodeUnprepareResources_FullMethodName, codes.OK, 0},
	}, calls)

	require.NoError(t, m.UnprepareResources(ctx, podWith()))
	ops, calls = metrics.take()
	assert.Equal(t, []operation{{dra.OpUnprepareResources, 0, false}}, ops, "a pod without claims is observed too, as upstream's")
	assert.Empty(t, calls)

	// A restarted node reads the claims back, prepared by nobody yet.
	require.NoError(t, m.PrepareResources(ctx, web))
	restarted, err := dra.New(dra.Options{Claims: api, StateDir: stateDir})
	require.NoError(t, err)
	recorded, err := restarted.Recorded()
	require.NoError(t, err)
	assert.NotEmpty(t, recorded)
	assert.Equal(t, map[string]int{dra.AnyDriver: 0}, restarted.ClaimsInUse())
}
