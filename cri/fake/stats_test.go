package fake_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestStats(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	sb, cfg := e.runPod("web")
	app := e.create(sb, cfg, containerConfig("app", "busybox"))
	require.NoError(t, e.rt.StartContainer(ctx, app))
	idle := e.create(sb, cfg, containerConfig("idle", "busybox")) // created, not running
	other := e.run("other")
	e.clk.Step(time.Minute)

	st, err := e.rt.ContainerStats(ctx, app)
	require.NoError(t, err)
	assert.Equal(t, app, st.Attributes.Id)
	assert.Equal(t, "app", st.Attributes.Metadata.Name)
	assert.Equal(t, map[string]string{"container": "app"}, st.Attributes.Labels)
	assert.Zero(t, st.Cpu.UsageCoreNanoSeconds.Value)
	assert.Zero(t, st.Memory.WorkingSetBytes.Value)
	assert.Equal(t, nanos(time.Minute), st.Cpu.Timestamp)
	assert.Equal(t, nanos(time.Minute), st.Memory.Timestamp)

	require.NoError(t, e.rt.SetContainerStats(app, &runtimeapi.ContainerStats{
		Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: 100 << 20}},
	}))
	st, err = e.rt.ContainerStats(ctx, app)
	require.NoError(t, err)
	assert.EqualValues(t, 100<<20, st.Memory.WorkingSetBytes.Value)
	assert.Equal(t, nanos(time.Minute), st.Memory.Timestamp, "filled in")
	assert.Equal(t, app, st.Attributes.Id, "filled in")
	assert.Nil(t, st.Cpu, "what the test set")

	list, err := e.rt.ListContainerStats(ctx, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{app, other}, statsIDs(list), "running containers only")
	list, err = e.rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{PodSandboxId: sb})
	require.NoError(t, err)
	assert.Equal(t, []string{app}, statsIDs(list))
	list, err = e.rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{LabelSelector: map[string]string{"container": "other"}})
	require.NoError(t, err)
	assert.Equal(t, []string{other}, statsIDs(list))
	list, err = e.rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: idle})
	require.NoError(t, err)
	assert.Empty(t, list)

	require.NoError(t, e.rt.SetPodSandboxStats(sb, &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{
		Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: 200 << 20}},
	}}))
	ps, err := e.rt.PodSandboxStats(ctx, sb)
	require.NoError(t, err)
	assert.Equal(t, sb, ps.Attributes.Id)
	assert.Equal(t, "web", ps.Attributes.Metadata.Name)
	assert.EqualValues(t, 200<<20, ps.Linux.Memory.WorkingSetBytes.Value)
	require.Len(t, ps.Linux.Containers, 1)
	assert.EqualValues(t, 100<<20, ps.Linux.Containers[0].Memory.WorkingSetBytes.Value)

	pl, err := e.rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{"app": "pod-other"}})
	require.NoError(t, err)
	require.Len(t, pl, 1)
	assert.Zero(t, pl[0].Linux.Memory.WorkingSetBytes.Value)
	require.NoError(t, e.rt.StopPodSandbox(ctx, sb))
	pl, err = e.rt.ListPodSandboxStats(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, pl, 1, "ready sandboxes only")

	require.NoError(t, e.rt.SetContainerStats(app, nil))
	_, err = e.rt.ContainerStats(ctx, "nope")
	require.ErrorIs(t, err, cri.ErrNotFound)
	_, err = e.rt.PodSandboxStats(ctx, "nope")
	require.ErrorIs(t, err, cri.ErrNotFound)
	require.ErrorIs(t, e.rt.SetContainerStats("nope", nil), cri.ErrNotFound)
	require.ErrorIs(t, e.rt.SetPodSandboxStats("nope", nil), cri.ErrNotFound)
}

func statsIDs(l []*runtimeapi.ContainerStats) []string {
	var ids []string
	for _, s := range l {
		ids = append(ids, s.Attributes.Id)
	}
	return ids
}

func TestStatusAndConfig(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	v, err := e.rt.Version(ctx, "v1")
	require.NoError(t, err)
	assert.Equal(t, "kubeletkit-fake", v.RuntimeName)
	assert.Equal(t, fake.DefaultRuntimeVersion, v.RuntimeVersion)
	assert.Equal(t, "v1", v.RuntimeApiVersion)
	assert.Equal(t, "0.1.0", v.Version)

	named := newEnv(t, fake.Options{RuntimeName: "containerd", RuntimeVersion: "v1.7.27"})
	v, err = named.rt.Version(ctx, "v1")
	require.NoError(t, err)
	assert.Equal(t, "containerd", v.RuntimeName)
	assert.Equal(t, "v1.7.27", v.RuntimeVersion)

	conditions := func() map[string]*runtimeapi.RuntimeCondition {
		resp, err := e.rt.Status(ctx, false)
		require.NoError(t, err)
		out := map[string]*runtimeapi.RuntimeCondition{}
		for _, c := range resp.Status.Conditions {
			out[c.Type] = c
		}
		return out
	}
	c := conditions()
	assert.True(t, c[runtimeapi.RuntimeReady].Status)
	assert.True(t, c[runtimeapi.NetworkReady].Status)
	e.rt.SetNetworkReady(false, "NetworkPluginNotReady", "cni plugin not initialized")
	c = conditions()
	assert.True(t, c[runtimeapi.RuntimeReady].Status)
	assert.False(t, c[runtimeapi.NetworkReady].Status)
	assert.Equal(t, "NetworkPluginNotReady", c[runtimeapi.NetworkReady].Reason)
	assert.Equal(t, "cni plugin not initialized", c[runtimeapi.NetworkReady].Message)
	e.rt.SetRuntimeReady(false, "Restarting", "")
	assert.False(t, conditions()[runtimeapi.RuntimeReady].Status)

	rc, err := e.rt.RuntimeConfig(ctx)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.CgroupDriver_CGROUPFS, rc.Linux.CgroupDriver)
	e.rt.SetCgroupDriver(runtimeapi.CgroupDriver_SYSTEMD)
	rc, err = e.rt.RuntimeConfig(ctx)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.CgroupDriver_SYSTEMD, rc.Linux.CgroupDriver)

	assert.Nil(t, e.rt.LastRuntimeConfig())
	cfg := &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: "10.244.1.0/24"}}
	require.NoError(t, e.rt.UpdateRuntimeConfig(ctx, cfg))
	cfg.NetworkConfig.PodCidr = "changed"
	assert.Equal(t, "10.244.1.0/24", e.rt.LastRuntimeConfig().NetworkConfig.PodCidr)
	calls := e.rt.CallsOf(fake.UpdateRuntimeConfig)
	require.Len(t, calls, 1)
	assert.Equal(t, "10.244.1.0/24", calls[0].Request.(*runtimeapi.UpdateRuntimeConfigRequest).RuntimeConfig.NetworkConfig.PodCidr)
}
