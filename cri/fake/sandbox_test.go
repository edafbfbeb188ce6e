package fake_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestSandboxLifecycle(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	cfg := podConfig("web")
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
	}}
	id, err := e.rt.RunPodSandbox(ctx, cfg, "runc")
	require.NoError(t, err)
	assert.Len(t, id, 64)

	resp, err := e.rt.PodSandboxStatus(ctx, id, true)
	require.NoError(t, err)
	st := resp.Status
	assert.Equal(t, id, st.Id)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, st.State)
	assert.Equal(t, nanos(0), st.CreatedAt)
	assert.True(t, proto.Equal(cfg.Metadata, st.Metadata))
	assert.Equal(t, cfg.Labels, st.Labels)
	assert.Equal(t, cfg.Annotations, st.Annotations)
	assert.Equal(t, "runc", st.RuntimeHandler)
	assert.Equal(t, "10.88.0.2", st.Network.Ip, "the first address after the gateway")
	assert.True(t, proto.Equal(cfg.Linux.SecurityContext.NamespaceOptions, st.Linux.Namespaces.Options))
	assert.Equal(t, nanos(0), resp.Timestamp)
	assert.Contains(t, resp.Info["info"], `"name":"web"`)

	e.clk.Step(time.Second)
	second, _ := e.runPod("second")
	assert.Equal(t, "10.88.0.3", e.sandboxStatus(second).Network.Ip)
	assert.Equal(t, nanos(time.Second), e.sandboxStatus(second).CreatedAt)

	host := podConfig("host")
	host.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	hostID, err := e.rt.RunPodSandbox(ctx, host, "")
	require.NoError(t, err)
	assert.Empty(t, e.sandboxStatus(hostID).Network.Ip, "no IP for the node's network, as containerd")

	require.NoError(t, e.rt.StopPodSandbox(ctx, id))
	st = e.sandboxStatus(id)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, st.State)
	assert.Empty(t, st.Network.Ip, "a stopped sandbox's network is torn down")
	require.NoError(t, e.rt.StopPodSandbox(ctx, id), "stopping twice")

	third, _ := e.runPod("third")
	assert.Equal(t, "10.88.0.4", e.sandboxStatus(third).Network.Ip, "addresses are handed out in order, as host-local")

	require.NoError(t, e.rt.RemovePodSandbox(ctx, id))
	_, err = e.rt.PodSandboxStatus(ctx, id, false)
	require.ErrorIs(t, err, cri.ErrNotFound)
	assert.ErrorContains(t, err, id)
	require.NoError(t, e.rt.RemovePodSandbox(ctx, id), "removing twice")
	require.NoError(t, e.rt.StopPodSandbox(ctx, id), "stopping a removed sandbox")
}

func TestSandboxErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *env)
		cfg   *runtimeapi.PodSandboxConfig
		want  error
	}{
		{name: "no metadata", cfg: &runtimeapi.PodSandboxConfig{}, want: cri.ErrInvalidArgument},
		{name: "no uid", cfg: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "b"}}, want: cri.ErrInvalidArgument},
		{name: "name reserved", setup: func(e *env) { e.runPod("web") }, cfg: podConfig("web"), want: cri.ErrAlreadyExists},
		{name: "another attempt", setup: func(e *env) { e.runPod("web") }, cfg: func() *runtimeapi.PodSandboxConfig {
			c := podConfig("web")
			c.Metadata.Attempt = 1
			return c
		}()},
		{name: "name released by removal", setup: func(e *env) {
			id, _ := e.runPod("web")
			require.NoError(e.t, e.rt.RemovePodSandbox(e.t.Context(), id))
		}, cfg: podConfig("web")},
		{name: "network not ready", setup: func(e *env) {
			e.rt.SetNetworkReady(false, "NetworkPluginNotReady", "cni plugin not initialized")
		}, cfg: podConfig("web"), want: cri.ErrFailedPrecondition},
		{name: "host network while the network is not ready", setup: func(e *env) {
			e.rt.SetNetworkReady(false, "NetworkPluginNotReady", "cni plugin not initialized")
		}, cfg: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "b", Uid: "c"},
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{})
			if tc.setup != nil {
				tc.setup(e)
			}
			_, err := e.rt.RunPodSandbox(t.Context(), tc.cfg, "")
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}

	t.Run("status of a missing sandbox", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		_, err := e.rt.PodSandboxStatus(t.Context(), "nope", false)
		require.ErrorIs(t, err, cri.ErrNotFound)
		_, err = e.rt.PodSandboxStatus(t.Context(), "", false)
		require.ErrorIs(t, err, cri.ErrInvalidArgument)
	})
}

func TestStopAndRemovePodSandboxTakeTheContainers(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	sb, cfg := e.runPod("web")
	running := e.create(sb, cfg, containerConfig("app", "busybox"))
	require.NoError(t, e.rt.StartContainer(ctx, running))
	created := e.create(sb, cfg, containerConfig("init", "busybox"))
	other := e.run("other")

	e.clk.Step(time.Minute)
	require.NoError(t, e.rt.StopPodSandbox(ctx, sb))
	st := e.status(running)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	assert.EqualValues(t, 137, st.ExitCode, "containerd kills them without grace")
	assert.Equal(t, nanos(time.Minute), st.FinishedAt)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, e.status(created).State)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.status(other).State, "other pods are untouched")

	require.NoError(t, e.rt.RemovePodSandbox(ctx, sb))
	for _, id := range []string{running, created} {
		_, err := e.rt.ContainerStatus(ctx, id, false)
		require.ErrorIs(t, err, cri.ErrNotFound)
	}
	assert.Len(t, e.rt.Containers(), 1)
}

func TestRemoveReadyPodSandboxStopsItFirst(t *testing.T) {
	e := newEnv(t, fake.Options{})
	e.run("app")
	sandboxes := e.rt.Sandboxes()
	require.Len(t, sandboxes, 1)
	require.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sandboxes[0].State)
	require.NoError(t, e.rt.RemovePodSandbox(t.Context(), sandboxes[0].Id), "containerd 1.7 stops it rather than refusing")
	assert.Empty(t, e.rt.Sandboxes())
	assert.Empty(t, e.rt.Containers())
}

func TestListPodSandboxFilters(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	a, _ := e.runPod("a")
	b, _ := e.runPod("b")
	c, _ := e.runPod("c")
	require.NoError(t, e.rt.StopPodSandbox(ctx, c))
	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	notReady := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	cases := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"nil", nil, []string{a, b, c}},
		{"empty", &runtimeapi.PodSandboxFilter{}, []string{a, b, c}},
		{"id", &runtimeapi.PodSandboxFilter{Id: b}, []string{b}},
		{"unique prefix", &runtimeapi.PodSandboxFilter{Id: uniquePrefix(b, a, c)}, []string{b}},
		{"unknown id", &runtimeapi.PodSandboxFilter{Id: "nope"}, nil},
		{"ready", &runtimeapi.PodSandboxFilter{State: ready}, []string{a, b}},
		{"not ready", &runtimeapi.PodSandboxFilter{State: notReady}, []string{c}},
		{"label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "a"}}, []string{a}},
		{"label absent", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "x"}}, nil},
		{"id and state", &runtimeapi.PodSandboxFilter{Id: c, State: ready}, nil},
		{"label and state", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "c"}, State: notReady}, []string{c}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.rt.ListPodSandbox(ctx, tc.filter)
			require.NoError(t, err)
			assert.Equal(t, tc.want, sandboxIDs(got))
		})
	}
}

func sandboxIDs(l []*runtimeapi.PodSandbox) []string {
	var ids []string
	for _, s := range l {
		ids = append(ids, s.Id)
	}
	return ids
}

// uniquePrefix returns the shortest prefix of id that none of others has.
func uniquePrefix(id string, others ...string) string {
	for n := 1; n <= len(id); n++ {
		p, unique := id[:n], true
		for _, o := range others {
			if len(o) >= n && o[:n] == p {
				unique = false
			}
		}
		if unique {
			return p
		}
	}
	return id
}

func TestSandboxIPsAreReleasedAndReused(t *testing.T) {
	e := newEnv(t, fake.Options{CallHistory: -1})
	ctx := t.Context()
	// Hand out 10.88.0.2 to 10.88.255.254 (65533 addresses), then check the
	// pool is exhausted and that a stopped sandbox's address comes back.
	const n = 65533
	var first string
	for i := range n {
		id, err := e.rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u", Attempt: uint32(i)},
		}, "")
		require.NoError(t, err)
		if i == 0 {
			first = id
		}
	}
	last := e.rt.Sandboxes()[n-1]
	assert.Equal(t, "10.88.255.254", last.Network.Ip)
	_, err := e.rt.RunPodSandbox(ctx, podConfig("full"), "")
	require.Error(t, err)
	assert.ErrorContains(t, err, "no free IP address")
	assert.False(t, errors.Is(err, cri.ErrAlreadyExists))

	require.NoError(t, e.rt.StopPodSandbox(ctx, first))
	id, err := e.rt.RunPodSandbox(ctx, podConfig("again"), "")
	require.NoError(t, err)
	assert.Equal(t, "10.88.0.2", e.sandboxStatus(id).Network.Ip)
}
