package upstreambench

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// relistRuntime is what a relist calls, and Version, which upstream's
// kuberuntime manager calls when it is built.
type relistRuntime interface {
	Version(ctx context.Context, v string) (*runtimeapi.VersionResponse, error)
	ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// nodeRuntime is a runtime a node can be built on: cri/fake, or cri-api's
// FakeRuntimeService.
type nodeRuntime interface {
	relistRuntime
	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	RemoveContainer(ctx context.Context, containerID string) error
}

var (
	_ nodeRuntime   = (*fake.Runtime)(nil)
	_ nodeRuntime   = (*critest.FakeRuntimeService)(nil)
	_ relistRuntime = (*stubRuntime)(nil)
)

// criService presents a relistRuntime as the internalapi.RuntimeService
// upstream's kuberuntime manager takes, and both PLEGs call it. Any call
// other than relistRuntime's hits the nil embedded interface and panics,
// which would show that the benchmark measures more than a relist.
type criService struct {
	internalapi.RuntimeService
	rt relistRuntime
}

func (s criService) Version(ctx context.Context, v string) (*runtimeapi.VersionResponse, error) {
	return s.rt.Version(ctx, v)
}

func (s criService) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return s.rt.ListPodSandbox(ctx, f)
}

func (s criService) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return s.rt.ListContainers(ctx, f)
}

func (s criService) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return s.rt.PodSandboxStatus(ctx, id, verbose)
}

func (s criService) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return s.rt.ContainerStatus(ctx, id, verbose)
}

// node is the workload of pleg's BenchmarkRelist: a runtime holding pods of
// a ready sandbox and two running containers; toggle changes pods between
// relists.
type node struct {
	rt        nodeRuntime
	uids      []types.UID
	sandboxes []string
	extra     []string // the third container of each pod, while it exists
	// forget, when set, drops the runtime's record of calls (untimed).
	forget func()
}

// newFakeNode builds a node on cri/fake (real clock, no call recording).
func newFakeNode(tb testing.TB, pods int) *node {
	tb.Helper()
	rt := fake.New(fake.Options{Images: []string{"busybox"}, CallHistory: -1})
	tb.Cleanup(rt.Close)
	return newNode(tb, rt, pods)
}

// newCRIAPINode builds a node on cri-api's FakeRuntimeService, the runtime
// upstream's kuberuntime tests use. It records every call; change forgets
// them.
func newCRIAPINode(tb testing.TB, pods int) *node {
	tb.Helper()
	rt := critest.NewFakeRuntimeService()
	n := newNode(tb, rt, pods)
	n.forget = func() {
		rt.Lock()
		rt.Called = rt.Called[:0]
		rt.Unlock()
	}
	return n
}

func newNode(tb testing.TB, rt nodeRuntime, pods int) *node {
	tb.Helper()
	n := &node{rt: rt, extra: make([]string, pods)}
	for i := range pods {
		uid := types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		sb, err := n.rt.RunPodSandbox(context.Background(), sandboxConfig(uid), "")
		if err != nil {
			tb.Fatal(err)
		}
		n.uids, n.sandboxes = append(n.uids, uid), append(n.sandboxes, sb)
		for _, c := range []string{"app", "sidecar"} {
			n.start(tb, i, c)
		}
	}
	return n
}

func sandboxConfig(uid types.UID) *runtimeapi.PodSandboxConfig {
	name := "pod-" + string(uid)
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: string(uid)},
		Labels:   cri.PodLabels(uid, name, "default"),
	}
}

func (n *node) start(tb testing.TB, i int, name string) string {
	ctx := context.Background()
	cfg := sandboxConfig(n.uids[i])
	id, err := n.rt.CreateContainer(ctx, n.sandboxes[i], &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Labels:   cri.ContainerLabels(n.uids[i], cfg.Metadata.Name, "default", name),
	}, cfg)
	if err == nil {
		err = n.rt.StartContainer(ctx, id)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// toggle changes the first k pods: each gets a third container, or loses the
// one it got last time. It returns the number of events the next relist must
// deliver: ContainerStarted for a container added, ContainerDied and
// ContainerRemoved for a running container removed.
func (n *node) toggle(tb testing.TB, k int) int {
	events := 0
	for i := range k {
		if n.extra[i] == "" {
			n.extra[i] = n.start(tb, i, "extra")
			events++
			continue
		}
		if err := n.rt.RemoveContainer(context.Background(), n.extra[i]); err != nil {
			tb.Fatal(err)
		}
		n.extra[i] = ""
		events += 2
	}
	return events
}

// workload is a runtime whose pods all change between relists.
type workload interface {
	runtime() relistRuntime
	// change changes every pod and returns how many events the next relist
	// must deliver.
	change(tb testing.TB) int
}

func (n *node) runtime() relistRuntime { return n.rt }

func (n *node) change(tb testing.TB) int {
	if n.forget != nil {
		n.forget()
	}
	return n.toggle(tb, len(n.uids))
}

// stubRuntime serves what a node listed and reported in its two states (the
// pods without and with their third container), switching state on change,
// at the cost of a map lookup per status call: the PLEGs' own cost, with
// the same data as the node's.
type stubRuntime struct {
	version *runtimeapi.VersionResponse
	states  [2]runtimeState
	cur     int
}

type runtimeState struct {
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	sbStatus   map[string]*runtimeapi.PodSandboxStatusResponse
	cStatus    map[string]*runtimeapi.ContainerStatusResponse
	events     int // what a relist that finds this state delivers
}

func newStub(tb testing.TB, pods int) *stubRuntime {
	tb.Helper()
	n := newFakeNode(tb, pods)
	s := &stubRuntime{}
	var err error
	if s.version, err = n.rt.Version(context.Background(), ""); err != nil {
		tb.Fatal(err)
	}
	for i := range s.states {
		if i > 0 {
			n.toggle(tb, pods)
		}
		s.states[i] = snapshot(tb, n.rt)
	}
	s.states[0].events = 2 * pods // the third container died and went
	s.states[1].events = pods     // the third container started
	return s
}

func snapshot(tb testing.TB, rt relistRuntime) runtimeState {
	ctx := context.Background()
	st := runtimeState{sbStatus: map[string]*runtimeapi.PodSandboxStatusResponse{}, cStatus: map[string]*runtimeapi.ContainerStatusResponse{}}
	var err error
	if st.sandboxes, err = rt.ListPodSandbox(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	if st.containers, err = rt.ListContainers(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	for _, sb := range st.sandboxes {
		if st.sbStatus[sb.Id], err = rt.PodSandboxStatus(ctx, sb.Id, false); err != nil {
			tb.Fatal(err)
		}
	}
	for _, c := range st.containers {
		if st.cStatus[c.Id], err = rt.ContainerStatus(ctx, c.Id, false); err != nil {
			tb.Fatal(err)
		}
	}
	return st
}

func (s *stubRuntime) runtime() relistRuntime { return s }

func (s *stubRuntime) change(testing.TB) int {
	s.cur = 1 - s.cur
	return s.states[s.cur].events
}

func (s *stubRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return s.version, nil
}

func (s *stubRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return s.states[s.cur].sandboxes, nil
}

func (s *stubRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return s.states[s.cur].containers, nil
}

func (s *stubRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if r, ok := s.states[s.cur].sbStatus[id]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("sandbox %s: %w", id, cri.ErrNotFound)
}

func (s *stubRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	if r, ok := s.states[s.cur].cStatus[id]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("container %s: %w", id, cri.ErrNotFound)
}
