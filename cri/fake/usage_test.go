package fake_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// TestUsageRules: a scripted container reports its CPU rate and a
// cumulative CPU time that grows with the clock from its start, and its
// memory; its sandbox the sums of its running containers.
func TestUsageRules(t *testing.T) {
	const quarter, half = 250_000_000, 500_000_000
	e := newEnv(t, fake.Options{UsageRules: []fake.UsageRule{
		{Name: "web", Usage: fake.Usage{NanoCores: half, MemoryBytes: 64 << 20}},
		{CommandPrefix: []string{"sidecar"}, Usage: fake.Usage{NanoCores: quarter, MemoryBytes: 16 << 20}},
	}})
	ctx := t.Context()
	sb, cfg := e.runPod("p")
	webCfg := containerConfig("web", "busybox")
	webCfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 100 << 20}}
	web := e.create(sb, cfg, webCfg)
	side := e.create(sb, cfg, containerConfig("side", "busybox", "sidecar", "--v"))
	idle := e.create(sb, cfg, containerConfig("idle", "busybox"))
	require.NoError(t, e.rt.StartContainer(ctx, web))
	e.clk.Step(10 * time.Second)
	require.NoError(t, e.rt.StartContainer(ctx, side))
	require.NoError(t, e.rt.StartContainer(ctx, idle))
	e.clk.Step(10 * time.Second)

	cases := []struct {
		id                  string
		wantNanoCores       uint64
		wantCPU, wantMemory uint64
		wantAvailable       uint64
	}{
		{id: web, wantNanoCores: half, wantCPU: uint64(10 * time.Second), wantMemory: 64 << 20, wantAvailable: 36 << 20},
		{id: side, wantNanoCores: quarter, wantCPU: uint64(2500 * time.Millisecond), wantMemory: 16 << 20},
		{id: idle}, // no rule: zero, as before
	}
	for _, tc := range cases {
		st, err := e.rt.ContainerStats(ctx, tc.id)
		require.NoError(t, err)
		name := st.Attributes.Metadata.Name
		assert.Equal(t, tc.wantNanoCores, st.Cpu.UsageNanoCores.Value, name)
		assert.Equal(t, tc.wantCPU, st.Cpu.UsageCoreNanoSeconds.Value, name)
		assert.Equal(t, nanos(20*time.Second), st.Cpu.Timestamp, name)
		assert.Equal(t, tc.wantMemory, st.Memory.WorkingSetBytes.Value, name)
		assert.Equal(t, tc.wantMemory, st.Memory.UsageBytes.Value, name)
		assert.Equal(t, tc.wantMemory, st.Memory.RssBytes.Value, name)
		assert.Equal(t, tc.wantAvailable, st.Memory.AvailableBytes.Value, name)
		assert.Equal(t, nanos(20*time.Second), st.Memory.Timestamp, name)
	}

	ps, err := e.rt.PodSandboxStats(ctx, sb)
	require.NoError(t, err)
	assert.Equal(t, uint64(half+quarter), ps.Linux.Cpu.UsageNanoCores.Value)
	assert.Equal(t, uint64(12500*time.Millisecond), ps.Linux.Cpu.UsageCoreNanoSeconds.Value)
	assert.Equal(t, uint64(80<<20), ps.Linux.Memory.WorkingSetBytes.Value)
	assert.Equal(t, uint64(4), ps.Linux.Process.ProcessCount.Value, "three containers and the pause process")
	assert.Equal(t, nanos(20*time.Second), ps.Linux.Cpu.Timestamp)
	assert.Len(t, ps.Linux.Containers, 3)

	// The counter keeps growing with the clock; a stopped container
	// leaves its pod's sums.
	e.clk.Step(time.Minute)
	list, err := e.rt.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{Id: web})
	require.NoError(t, err)
	assert.Equal(t, uint64(40*time.Second), list[0].Cpu.UsageCoreNanoSeconds.Value)
	require.NoError(t, e.rt.StopContainer(ctx, side, 0))
	pl, err := e.rt.ListPodSandboxStats(ctx, nil)
	require.NoError(t, err)
	require.Len(t, pl, 1)
	assert.Equal(t, uint64(half), pl[0].Linux.Cpu.UsageNanoCores.Value)
	assert.Equal(t, uint64(64<<20), pl[0].Linux.Memory.WorkingSetBytes.Value)

	// What a test sets wins over the rules, and counts in the sums.
	require.NoError(t, e.rt.SetContainerStats(idle, &runtimeapi.ContainerStats{Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: 1 << 20}}}))
	ps, err = e.rt.PodSandboxStats(ctx, sb)
	require.NoError(t, err)
	assert.Equal(t, uint64(65<<20), ps.Linux.Memory.WorkingSetBytes.Value)
	require.NoError(t, e.rt.SetPodSandboxStats(sb, &runtimeapi.PodSandboxStats{}))
	ps, err = e.rt.PodSandboxStats(ctx, sb)
	require.NoError(t, err)
	assert.Nil(t, ps.Linux.Cpu, "what the test set")

	// Rules are matched at each read: replacing them applies at once.
	e.rt.SetUsageRules(nil)
	st, err := e.rt.ContainerStats(ctx, web)
	require.NoError(t, err)
	assert.Zero(t, st.Cpu.UsageNanoCores.Value)
	assert.Zero(t, st.Memory.WorkingSetBytes.Value)
	e.rt.SetUsageRules([]fake.UsageRule{{Image: "busybox", Usage: fake.Usage{NanoCores: 1}}})
	st, err = e.rt.ContainerStats(ctx, web)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Cpu.UsageNanoCores.Value)
}

// TestUsageNoRuleKeepsZeroSandbox: without a matching rule a sandbox keeps
// the zero stats it always had.
func TestUsageNoRuleKeepsZeroSandbox(t *testing.T) {
	e := newEnv(t, fake.Options{UsageRules: []fake.UsageRule{{Name: "other", Usage: fake.Usage{NanoCores: 5}}}})
	id := e.run("app")
	pl, err := e.rt.ListPodSandboxStats(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, pl, 1)
	assert.Zero(t, pl[0].Linux.Cpu.UsageNanoCores.Value)
	assert.Zero(t, pl[0].Linux.Process.ProcessCount.Value)
	st, err := e.rt.ContainerStats(t.Context(), id)
	require.NoError(t, err)
	assert.Zero(t, st.Cpu.UsageNanoCores.Value)
}

func TestUsageCPUTimeDoesNotOverflow(t *testing.T) {
	e := newEnv(t, fake.Options{UsageRules: []fake.UsageRule{{Usage: fake.Usage{NanoCores: 64_000_000_000}}}})
	id := e.run("busy")
	e.clk.Step(400 * 24 * time.Hour) // 64 cores for 400 days
	st, err := e.rt.ContainerStats(t.Context(), id)
	require.NoError(t, err)
	want := uint64(64 * 400 * 24 * time.Hour)
	assert.Equal(t, want, st.Cpu.UsageCoreNanoSeconds.Value)
	assert.Less(t, st.Cpu.UsageCoreNanoSeconds.Value, uint64(math.MaxUint64))
}
