package node_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// pleg is a PLEGHealth that reports each check on a channel.
type pleg struct {
	err     atomic.Pointer[error]
	checked chan struct{}
}

func (p *pleg) Healthy() (bool, error) {
	select {
	case p.checked <- struct{}{}:
	default:
	}
	if e := p.err.Load(); e != nil {
		return false, *e
	}
	return true, nil
}

type fixture struct {
	t    *testing.T
	c    *node.Controller
	sink *nodetest.Sink
	rt   *nodetest.Runtime
	pleg *pleg
	clk  *clocktesting.FakeClock
	ctx  context.Context
}

func start(t *testing.T, sink *nodetest.Sink, mod func(*node.Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, sink: sink, rt: nodetest.NewRuntime("containerd", "2.1.0"), pleg: &pleg{checked: make(chan struct{}, 1)}, clk: clocktesting.NewFakeClock(t0)}
	opts := node.Options{
		NodeName: "node1", Sink: sink, Leases: sink, Runtime: f.rt, Images: f.rt, PLEG: f.pleg,
		Machine: nodetest.Machine{Cap: capacity()}, Clock: f.clk,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := node.New(opts)
	require.NoError(t, err)
	f.c = c
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	t.Cleanup(wcancel)
	f.ctx = wctx
	return f
}

func (f *fixture) wait(cond func([]nodetest.Call) bool) {
	f.t.Helper()
	require.NoError(f.t, f.sink.Wait(f.ctx, cond))
}

// stepUntil advances the fake clock by step until cond holds for the sink's
// calls: a timer is armed after a call the test sees returns, so a single
// step could come before it.
func (f *fixture) stepUntil(step time.Duration, cond func([]nodetest.Call) bool) {
	f.t.Helper()
	for !cond(f.sink.Calls()) {
		ctx, cancel := context.WithTimeout(f.ctx, 20*time.Millisecond)
		_ = f.sink.Wait(ctx, cond)
		cancel()
		require.NoError(f.t, f.ctx.Err(), "condition not met before the deadline")
		f.clk.Step(step)
	}
}

func okCalls(op nodetest.Op, n int) func([]nodetest.Call) bool {
	return func(calls []nodetest.Call) bool {
		k := 0
		for _, c := range calls {
			if c.Op == op && c.Err == nil {
				k++
			}
		}
		return k >= n
	}
}

// tick steps the clock by d and waits until a status round has checked the
// PLEG (the round then runs to its end before the next tick is taken).
func (f *fixture) tick(d time.Duration) {
	f.t.Helper()
	f.clk.Step(d)
	select {
	case <-f.pleg.checked:
	case <-f.ctx.Done():
		f.t.Fatal("no status round")
	}
}

func TestControllerStatus(t *testing.T) {
	sink := &nodetest.Sink{}
	f := start(t, sink, func(o *node.Options) { o.Leases = nil })
	<-f.pleg.checked
	f.wait(okCalls(nodetest.OpUpdateStatus, 1))
	st, ok := sink.NodeStatus()
	require.True(t, ok)
	assert.Equal(t, v1.ConditionTrue, condition(st, v1.NodeReady).Status)

	// Unchanged: nothing pushed until the report period passed. Each tick
	// waits for its round to check the PLEG; the next tick's check proves
	// the previous round ended, so rounds 1-5 are known to be complete.
	for range 6 {
		f.tick(node.DefaultStatusUpdatePeriod)
	}
	assert.Len(t, sink.CallsOf(nodetest.OpUpdateStatus), 1)

	t.Run("runtime down is pushed at the next round", func(t *testing.T) {
		f.rt.SetDown(errors.New("rpc error: code = Unavailable"))
		f.clk.Step(node.DefaultStatusUpdatePeriod)
		f.wait(okCalls(nodetest.OpUpdateStatus, 2))
		st, _ := sink.NodeStatus()
		ready := condition(st, v1.NodeReady)
		assert.Equal(t, v1.ConditionFalse, ready.Status)
		assert.Equal(t, "container runtime is down: rpc error: code = Unavailable", ready.Message)
	})
	t.Run("pleg unhealthy", func(t *testing.T) {
		f.rt.SetDown(nil)
		e := errors.New("pleg was last seen active 3m1s ago; threshold is 3m0s")
		f.pleg.err.Store(&e)
		f.clk.Step(node.DefaultStatusUpdatePeriod)
		f.wait(okCalls(nodetest.OpUpdateStatus, 3))
		st, _ := sink.NodeStatus()
		assert.Equal(t, "PLEG is not healthy: "+e.Error(), condition(st, v1.NodeReady).Message)
	})
}

func TestControllerReportsUnchangedStatusEveryReportPeriod(t *testing.T) {
	sink := &nodetest.Sink{}
	f := start(t, sink, func(o *node.Options) { o.Leases = nil })
	f.wait(okCalls(nodetest.OpUpdateStatus, 1))
	<-f.pleg.checked
	for elapsed := time.Duration(0); elapsed < node.DefaultStatusReportPeriod; elapsed += node.DefaultStatusUpdatePeriod {
		f.tick(node.DefaultStatusUpdatePeriod)
	}
	f.wait(okCalls(nodetest.OpUpdateStatus, 2))
	calls := sink.CallsOf(nodetest.OpUpdateStatus)
	hb := condition(calls[1].Status, v1.NodeReady).LastHeartbeatTime
	assert.True(t, t0.Add(node.DefaultStatusReportPeriod).Equal(hb.Time), "heartbeat %s", hb)
	assert.True(t, t0.Equal(condition(calls[1].Status, v1.NodeReady).LastTransitionTime.Time))
}

// levelCounter is a slog.Handler that counts the records of each level
// whose message starts with prefix.
type levelCounter struct {
	prefix string
	mu     sync.Mutex
	n      map[slog.Level]int
}

func (h *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelCounter) WithGroup(string) slog.Handler            { return h }

func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.n == nil {
			h.n = map[slog.Level]int{}
		}
		h.n[r.Level]++
	}
	return nil
}

func (h *levelCounter) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[l]
}

func TestControllerLease(t *testing.T) {
	var failures atomic.Int32
	failures.Store(2)
	sink := &nodetest.Sink{}
	logs := &levelCounter{prefix: "renew"}
	f := start(t, sink, func(o *node.Options) { o.Logger = slog.New(logs) })
	f.wait(okCalls(nodetest.OpCreateLease, 1))
	l := sink.Lease()
	assert.Equal(t, "kube-node-lease", l.Namespace)
	assert.Equal(t, "node1", l.Name)
	assert.Equal(t, "node1", *l.Spec.HolderIdentity)
	assert.Equal(t, int32(40), *l.Spec.LeaseDurationSeconds)
	assert.True(t, t0.Equal(l.Spec.RenewTime.Time))

	f.stepUntil(time.Second, okCalls(nodetest.OpUpdateLease, 1))
	renewed := sink.Lease().Spec.RenewTime.Time
	assert.False(t, renewed.Before(t0.Add(node.DefaultLeaseRenewPeriod)), "renewed after the renew period: %s", renewed)

	t.Run("a failed renewal is retried with backoff", func(t *testing.T) {
		var mu sync.Mutex
		var attempts []time.Time
		sink.Fail = func(op nodetest.Op) error {
			if op != nodetest.OpUpdateLease {
				return nil
			}
			mu.Lock()
			attempts = append(attempts, f.clk.Now())
			mu.Unlock()
			if failures.Add(-1) >= 0 {
				return errors.New("etcdserver: request timed out")
			}
			return nil
		}
		// Step in small increments (the retry timer is armed after the
		// failure is seen, which the test cannot observe) until it works.
		f.stepUntil(time.Second, func(calls []nodetest.Call) bool {
			for _, c := range calls {
				if c.Op == nodetest.OpUpdateLease && c.Err != nil {
					return true
				}
			}
			return false
		})
		f.stepUntil(50*time.Millisecond, okCalls(nodetest.OpUpdateLease, 2))
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, attempts, 3)
		assert.GreaterOrEqual(t, attempts[1].Sub(attempts[0]), 200*time.Millisecond)
		assert.GreaterOrEqual(t, attempts[2].Sub(attempts[1]), 400*time.Millisecond)
		assert.Less(t, attempts[2].Sub(attempts[0]), node.DefaultLeaseRenewPeriod, "retried sooner than the renew period")
		// After a failure the lease is read again before the update.
		assert.GreaterOrEqual(t, len(sink.CallsOf(nodetest.OpGetLease)), 3)
		// The streak of two failures: one warning, then debug, and the
		// renewal that ends it says so (logged after the call the sink saw).
		f.stepUntil(time.Millisecond, func([]nodetest.Call) bool { return logs.count(slog.LevelInfo) > 0 })
		assert.Equal(t, 1, logs.count(slog.LevelWarn))
		assert.Equal(t, 1, logs.count(slog.LevelDebug))
		assert.Equal(t, 1, logs.count(slog.LevelInfo))
	})
}

func TestControllerLeaseRenewPeriodIsAQuarterOfItsDuration(t *testing.T) {
	sink := &nodetest.Sink{}
	f := start(t, sink, func(o *node.Options) { o.LeaseDuration = 8 * time.Second })
	f.wait(okCalls(nodetest.OpCreateLease, 1))
	assert.Equal(t, int32(8), *sink.Lease().Spec.LeaseDurationSeconds)

	f.stepUntil(100*time.Millisecond, okCalls(nodetest.OpUpdateLease, 1))
	renewed := sink.Lease().Spec.RenewTime.Time
	assert.False(t, renewed.Before(t0.Add(2*time.Second)), "renewed before a quarter of the duration: %s", renewed)
	assert.True(t, renewed.Before(t0.Add(2*time.Second+200*time.Millisecond)), "renewed late: %s", renewed)
}

func TestNew(t *testing.T) {
	good := node.Options{NodeName: "n", Sink: &nodetest.Sink{}, Runtime: nodetest.NewRuntime("x", "1"), Machine: nodetest.Machine{}}
	_, err := node.New(good)
	require.NoError(t, err)
	for name, mod := range map[string]func(*node.Options){
		"no name":                   func(o *node.Options) { o.NodeName = "" },
		"no sink":                   func(o *node.Options) { o.Sink = nil },
		"no runtime":                func(o *node.Options) { o.Runtime = nil },
		"no machine":                func(o *node.Options) { o.Machine = nil },
		"negative":                  func(o *node.Options) { o.LeaseDuration = -1 },
		"empty feature":             func(o *node.Options) { o.DeclaredFeatures = []string{"ExtendWebSocketsToKubelet", ""} },
		"lower-case feature":        func(o *node.Options) { o.DeclaredFeatures = []string{"extendWebSocketsToKubelet"} },
		"feature with a dash":       func(o *node.Options) { o.DeclaredFeatures = []string{"Extend-WebSockets"} },
		"feature with an empty sub": func(o *node.Options) { o.DeclaredFeatures = []string{"Feature/"} },
		"feature too long":          func(o *node.Options) { o.DeclaredFeatures = []string{"F" + strings.Repeat("e", 253)} },
	} {
		t.Run(name, func(t *testing.T) {
			o := good
			mod(&o)
			_, err := node.New(o)
			assert.ErrorIs(t, err, node.ErrInvalidOptions)
		})
	}
}

// The controller declares the features of its options in the status it
// pushes, sorted; changing the caller's slice later changes nothing.
func TestControllerDeclaresFeatures(t *testing.T) {
	sink := &nodetest.Sink{}
	features := []string{"RestartAllContainers", "ExtendWebSocketsToKubelet", "Feature/sub"}
	c, err := node.New(node.Options{NodeName: "n", Sink: sink, Runtime: nodetest.NewRuntime("x", "1"), Machine: nodetest.Machine{},
		Clock: clocktesting.NewFakeClock(time.Now()), DeclaredFeatures: features})
	require.NoError(t, err)
	features[0] = "Changed"
	require.NoError(t, c.SyncStatus(t.Context()))
	st, ok := sink.NodeStatus()
	require.True(t, ok)
	assert.Equal(t, []string{"ExtendWebSocketsToKubelet", "Feature/sub", "RestartAllContainers"}, st.DeclaredFeatures)
}

func TestLocalMachine(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(s), 0o644))
	}
	write("proc/meminfo", "MemTotal:        8000000 kB\nMemFree: 1 kB\n")
	write("etc/machine-id", "abc123\n")
	write("proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
	write("etc/os-release", "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\n")
	m := node.LocalMachine{Root: root, CPUs: 2}
	c, err := m.Capacity(context.Background())
	require.NoError(t, err)
	mem := c[v1.ResourceMemory]
	assert.Equal(t, int64(8000000*1024), mem.Value())
	cpu := c[v1.ResourceCPU]
	assert.Equal(t, int64(2), cpu.Value())
	pods := c[v1.ResourcePods]
	assert.Equal(t, int64(110), pods.Value())
	info, err := m.SystemInfo(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "abc123", info.MachineID)
	assert.Equal(t, "6.8.0-45-generic", info.KernelVersion)
	assert.Equal(t, "Ubuntu 24.04.1 LTS", info.OSImage)
	assert.Nil(t, info.Swap, "no swap")
	write("proc/meminfo", "MemTotal:        8000000 kB\nMemFree: 1 kB\nSwapTotal:       2097148 kB\n")
	info, err = m.SystemInfo(context.Background())
	require.NoError(t, err)
	require.NotNil(t, info.Swap)
	assert.Equal(t, int64(2097148*1024), *info.Swap.Capacity, "swap.capacity in bytes")

	_, err = node.LocalMachine{Root: t.TempDir()}.Capacity(context.Background())
	assert.Error(t, err)

	// maxPods replaces the pods capacity of any machine, and nothing else.
	c, err = node.WithMaxPods(m, 500).Capacity(context.Background())
	require.NoError(t, err)
	pods = c[v1.ResourcePods]
	assert.Equal(t, int64(500), pods.Value())
	mem = c[v1.ResourceMemory]
	assert.Equal(t, int64(8000000*1024), mem.Value())
	assert.Equal(t, m, node.WithMaxPods(m, 0), "no maxPods leaves the machine as it is")
	c, err = m.Capacity(context.Background())
	require.NoError(t, err)
	pods = c[v1.ResourcePods]
	assert.Equal(t, int64(110), pods.Value(), "the machine's own capacity is not changed")
}

func TestControllerHangingStatusSink(t *testing.T) {
	var hung atomic.Bool
	hung.Store(true)
	sink := &nodetest.Sink{}
	sink.Hang = func(op nodetest.Op) bool { return op == nodetest.OpUpdateStatus && hung.Load() }
	f := start(t, sink, nil)
	// The lease is kept while the status push hangs.
	f.wait(okCalls(nodetest.OpCreateLease, 1))
	f.stepUntil(time.Second, okCalls(nodetest.OpUpdateLease, 1))
	// The hung push is cut at CallTimeout (10s, on the fake clock) and the
	// next round pushes. The push's timer is armed when the push starts,
	// which the test cannot see: step until the cut shows.
	canceled := func(calls []nodetest.Call) bool {
		for _, c := range calls {
			if c.Op == nodetest.OpUpdateStatus && errors.Is(c.Err, context.Canceled) {
				return true
			}
		}
		return false
	}
	for !canceled(sink.Calls()) {
		ctx, cancel := context.WithTimeout(f.ctx, 20*time.Millisecond)
		_ = sink.Wait(ctx, canceled)
		cancel()
		require.NoError(t, f.ctx.Err())
		f.clk.Step(time.Second)
	}
	hung.Store(false)
	for !okCalls(nodetest.OpUpdateStatus, 1)(sink.Calls()) {
		ctx, cancel := context.WithTimeout(f.ctx, 20*time.Millisecond)
		_ = sink.Wait(ctx, okCalls(nodetest.OpUpdateStatus, 1))
		cancel()
		require.NoError(t, f.ctx.Err())
		f.clk.Step(time.Second)
	}
}
