package nodefarm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// startContainer runs a sandbox and starts a container in it on rt.
func startContainer(t *testing.T, rt *scriptedRuntime, name string) string {
	t.Helper()
	ctx := context.Background()
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: name}}
	sid, err := rt.RunPodSandbox(ctx, sb, "")
	require.NoError(t, err)
	_, err = rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, sb)
	require.NoError(t, err)
	id, err := rt.CreateContainer(ctx, sid, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image: &runtimeapi.ImageSpec{Image: "busybox"}}, sb)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))
	return id
}

func state(t *testing.T, rt *scriptedRuntime, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	st, err := rt.ContainerStatus(context.Background(), id, false)
	require.NoError(t, err)
	return st.Status
}

func TestScriptCrashRatio(t *testing.T) {
	for _, tc := range []struct {
		ratio float64
		want  runtimeapi.ContainerState
	}{
		{0, runtimeapi.ContainerState_CONTAINER_RUNNING},
		{1, runtimeapi.ContainerState_CONTAINER_EXITED},
	} {
		clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
		rt := newRuntime(0, clk, Script{CrashRatio: tc.ratio, CrashAfter: 5 * time.Second})
		id := startContainer(t, rt, "p")
		clk.Step(4 * time.Second)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, state(t, rt, id).State)
		clk.Step(time.Second)
		if tc.want == runtimeapi.ContainerState_CONTAINER_EXITED {
			require.Eventually(t, func() bool { return state(t, rt, id).State == tc.want }, 10*time.Second, time.Millisecond)
		}
		st := state(t, rt, id)
		assert.Equal(t, tc.want, st.State, "ratio %g", tc.ratio)
		if tc.want == runtimeapi.ContainerState_CONTAINER_EXITED {
			assert.Equal(t, int32(1), st.ExitCode)
			assert.Equal(t, "Error", st.Reason)
		}
		rt.Close()
	}
}

// About the ratio of the containers crash, and the same ones for the same
// node index.
func TestScriptCrashRatioIsAFraction(t *testing.T) {
	draws := func() []bool {
		rt := newRuntime(7, clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0)), Script{CrashRatio: 0.25})
		defer rt.Close()
		var out []bool
		for range 400 {
			out = append(out, rt.crash())
		}
		return out
	}
	a := draws()
	n := 0
	for _, c := range a {
		if c {
			n++
		}
	}
	assert.InDelta(t, 100, n, 30, "crashed of 400 at 0.25")
	assert.Equal(t, a, draws())
}

func TestScriptPullLatency(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	rt := newRuntime(0, clk, Script{PullLatency: 2 * time.Second})
	defer rt.Close()
	done := make(chan error, 1)
	go func() {
		_, err := rt.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
		done <- err
	}()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond)
	select {
	case <-done:
		t.Fatal("the pull ended before its latency")
	default:
	}
	clk.Step(2 * time.Second)
	require.NoError(t, <-done)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestScriptValidate(t *testing.T) {
	for _, s := range []Script{{CrashRatio: -0.1}, {CrashRatio: 1.5}, {CrashAfter: -time.Second}, {PullLatency: -time.Second}} {
		assert.ErrorIs(t, s.validate(), ErrInvalidOptions, "%+v", s)
	}
	assert.NoError(t, Script{CrashRatio: 0.01, PullLatency: time.Second}.validate())
}
