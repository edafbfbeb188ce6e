package statstest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/stats/statstest"
)

var boot = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestHostNode(t *testing.T) {
	clk := clocktesting.NewFakeClock(boot.Add(time.Hour))
	rx := uint64(5)
	h := &statstest.Host{
		Clock: clk, BootTime: boot, NanoCores: 1_500_000_000, MemoryCapacity: 8 << 30, MemoryWorkingSet: 3 << 30,
		MaxPID: 4096, Processes: 300,
		Interfaces: []statsv1alpha1.InterfaceStats{{Name: "ens4"}, {Name: "eth0", RxBytes: &rx}},
	}
	cases := []struct {
		name                      string
		only                      bool
		wantNetwork, wantRlimit   bool
		wantCPU, wantAvail, wantW uint64
	}{
		{name: "full", wantNetwork: true, wantRlimit: true, wantCPU: uint64(90 * time.Minute), wantAvail: 5 << 30, wantW: 3 << 30},
		{name: "cpu and memory", only: true, wantCPU: uint64(90 * time.Minute), wantAvail: 5 << 30, wantW: 3 << 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := h.Node(context.Background(), tc.only)
			require.NoError(t, err)
			assert.True(t, ns.StartTime.Time.Equal(boot))
			assert.Equal(t, tc.wantCPU, *ns.CPU.UsageCoreNanoSeconds, "1.5 cores for an hour")
			assert.Nil(t, ns.CPU.UsageNanoCores, "the provider computes the rate")
			assert.Equal(t, tc.wantAvail, *ns.Memory.AvailableBytes)
			assert.Equal(t, tc.wantW, *ns.Memory.WorkingSetBytes)
			assert.Equal(t, tc.wantNetwork, ns.Network != nil)
			assert.Equal(t, tc.wantRlimit, ns.Rlimit != nil)
			if tc.wantNetwork {
				assert.Equal(t, "eth0", ns.Network.Name, "eth0 is the default interface")
				assert.Len(t, ns.Network.Interfaces, 2)
			}
		})
	}
	h2 := &statstest.Host{NodeErr: errors.New("boom")}
	_, err := h2.Node(context.Background(), false)
	assert.ErrorContains(t, err, "boom")
}

func TestHostCgroupFilesystemDiskUsage(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(boot.Add(10 * time.Second))
	h := &statstest.Host{
		Clock:   clk,
		Cgroups: map[string]statstest.Cgroup{"/kubepods": {NanoCores: 100_000_000, MemoryBytes: 1 << 20, Start: boot}},
		Filesystems: map[string]stats.FsInfo{
			"/":           {Device: 1, CapacityBytes: 100},
			"/var/lib/kl": {Device: 2, CapacityBytes: 200},
		},
	}
	cs, err := h.Cgroup(ctx, "/kubepods")
	require.NoError(t, err)
	assert.Equal(t, uint64(time.Second), *cs.CPU.UsageCoreNanoSeconds)
	assert.Equal(t, uint64(1<<20), *cs.Memory.WorkingSetBytes)
	_, err = h.Cgroup(ctx, "/system.slice")
	assert.Error(t, err)

	for path, want := range map[string]uint64{"/var/lib/kl/pods/x": 2, "/var/lib/kl": 2, "/var/lib/klx": 1, "/etc": 1} {
		info, err := h.Filesystem(ctx, path)
		require.NoError(t, err, path)
		assert.Equal(t, want, info.Device, path)
		assert.Equal(t, clk.Now(), info.Time)
	}
	noRoot := &statstest.Host{Filesystems: map[string]stats.FsInfo{"/data": {}}}
	_, err = noRoot.Filesystem(ctx, "/etc")
	assert.Error(t, err)

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), make([]byte, 100), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 50), 0o644))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, "link")))
	du, err := h.DiskUsage(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, stats.DiskUsage{Time: clk.Now(), Bytes: 150, Inodes: 5}, du, "dir, a, sub, sub/b, link")
	du, err = h.DiskUsage(ctx, filepath.Join(dir, "missing"))
	require.NoError(t, err)
	assert.Zero(t, du.Bytes)

	assert.Equal(t, 2, h.CallsOf(statstest.MethodDiskUsage))
	assert.Equal(t, statstest.Call{Method: statstest.MethodCgroup, Arg: "/kubepods"}, h.Calls()[0])
}
