package fake_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is a fake runtime on a fake clock, with helpers that fail the test on
// an unexpected error.
type env struct {
	t   *testing.T
	clk *clocktesting.FakeClock
	rt  *fake.Runtime
}

// newEnv returns a runtime whose clock starts at t0, with busybox present
// unless opts names images.
func newEnv(t *testing.T, opts fake.Options) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	opts.Clock = clk
	if opts.Images == nil {
		opts.Images = []string{"busybox"}
	}
	rt := fake.New(opts)
	t.Cleanup(rt.Close)
	return &env{t: t, clk: clk, rt: rt}
}

func podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Labels:      map[string]string{"app": name},
		Annotations: map[string]string{"note": "pod " + name},
	}
}

func (e *env) runPod(name string) (string, *runtimeapi.PodSandboxConfig) {
	e.t.Helper()
	cfg := podConfig(name)
	id, err := e.rt.RunPodSandbox(e.t.Context(), cfg, "")
	require.NoError(e.t, err)
	return id, cfg
}

func containerConfig(name, image string, argv ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  argv,
		Labels:   map[string]string{"container": name},
	}
}

func (e *env) create(sandboxID string, sandboxConfig *runtimeapi.PodSandboxConfig, config *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	id, err := e.rt.CreateContainer(e.t.Context(), sandboxID, config, sandboxConfig)
	require.NoError(e.t, err)
	return id
}

// run creates and starts a container of busybox with argv in a new pod.
func (e *env) run(name string, argv ...string) string {
	e.t.Helper()
	sb, cfg := e.runPod("pod-" + name)
	id := e.create(sb, cfg, containerConfig(name, "busybox", argv...))
	require.NoError(e.t, e.rt.StartContainer(e.t.Context(), id))
	return id
}

func (e *env) status(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	resp, err := e.rt.ContainerStatus(e.t.Context(), id, false)
	require.NoError(e.t, err)
	return resp.Status
}

func (e *env) sandboxStatus(id string) *runtimeapi.PodSandboxStatus {
	e.t.Helper()
	resp, err := e.rt.PodSandboxStatus(e.t.Context(), id, false)
	require.NoError(e.t, err)
	return resp.Status
}

// nanos is t0 + d in CRI's nanoseconds.
func nanos(d time.Duration) int64 { return t0.Add(d).UnixNano() }

// waitUntil waits for a condition that another goroutine makes true, such as
// a call parking on the fake clock. It yields the processor between checks
// and never sleeps; the deadline only bounds a broken test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
	}
}

// async runs f in a goroutine and returns a channel with its error.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// receive returns what ch delivers, failing the test if nothing comes.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received")
		panic("unreachable")
	}
}

// pending asserts that ch has delivered nothing yet.
func pending[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpectedly received %v", v)
	default:
	}
}
