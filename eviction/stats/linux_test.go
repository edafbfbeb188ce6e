//go:build linux

package stats_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

const Gi = 1 << 30

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestNewLinuxRequiresRuntime(t *testing.T) {
	_, err := stats.NewLinux(stats.LinuxOptions{})
	assert.ErrorIs(t, err, stats.ErrMissingRuntime)
}

func TestLinuxNodeFromFixtures(t *testing.T) {
	cases := []struct {
		dir, podsCgroup       string
		wantAvail, wantWS     uint64
		wantAllocAvail        uint64
		wantMaxPID, wantProcs uint64
	}{
		// v1: usage 6Gi - total_inactive_file 2Gi; pods 3Gi - 1Gi.
		{dir: "v1", podsCgroup: "kubepods", wantAvail: 4 * Gi, wantWS: 4 * Gi, wantAllocAvail: 3 * Gi, wantMaxPID: 126000, wantProcs: 1234},
		// v2 root has no memory.current: MemTotal-MemFree (7Gi) - inactive_file 1Gi; pods 2.5Gi - 0.5Gi.
		{dir: "v2", podsCgroup: "kubepods.slice", wantAvail: 2 * Gi, wantWS: 6 * Gi, wantAllocAvail: 3 * Gi, wantMaxPID: 32768, wantProcs: 4000},
		// No memory controller: MemTotal-MemFree (7Gi) - Inactive(file) (2Gi).
		{dir: "nocgroup", wantAvail: 3 * Gi, wantWS: 5 * Gi, wantMaxPID: 32768, wantProcs: 4000},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			rt := fake.New(fake.Options{Clock: clk})
			defer rt.Close()
			root := filepath.Join("testdata", tc.dir)
			p, err := stats.NewLinux(stats.LinuxOptions{
				Runtime: rt, ProcRoot: filepath.Join(root, "proc"), CgroupRoot: filepath.Join(root, "cgroup"),
				RootDir: t.TempDir(), PodLogsDir: t.TempDir(), PodsCgroup: tc.podsCgroup, AllocatableMemoryBytes: 5 * Gi, Clock: clk,
			})
			require.NoError(t, err)
			s, err := p.Get(context.Background())
			require.NoError(t, err)
			assert.Equal(t, &stats.MemoryStats{Time: t0, AvailableBytes: tc.wantAvail, WorkingSetBytes: tc.wantWS}, s.Node.Memory)
			if tc.podsCgroup != "" {
				assert.Equal(t, &stats.MemoryStats{Time: t0, AvailableBytes: tc.wantAllocAvail, WorkingSetBytes: 2 * Gi}, s.Node.AllocatableMemory)
			} else {
				assert.Nil(t, s.Node.AllocatableMemory)
			}
			assert.Equal(t, &stats.RlimitStats{Time: t0, MaxPID: tc.wantMaxPID, NumOfRunningProcesses: tc.wantProcs}, s.Node.Rlimit)
			require.NotNil(t, s.Node.Fs)
			assert.Positive(t, s.Node.Fs.CapacityBytes)
			assert.LessOrEqual(t, s.Node.Fs.AvailableBytes, s.Node.Fs.CapacityBytes)
			// The fake's image filesystem is not mounted here: it is taken to be nodefs.
			require.NotNil(t, s.Node.ImageFs)
			assert.False(t, s.Node.DedicatedImageFs)
			assert.Equal(t, s.Node.Fs.CapacityBytes, s.Node.ImageFs.CapacityBytes)
		})
	}
}

func TestLinuxBadFixtures(t *testing.T) {
	rt := fake.New(fake.Options{})
	defer rt.Close()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "proc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "proc", "meminfo"), []byte("MemFree: 1 kB\n"), 0o644))
	p, err := stats.NewLinux(stats.LinuxOptions{Runtime: rt, ProcRoot: filepath.Join(dir, "proc"), CgroupRoot: dir})
	require.NoError(t, err)
	_, err = p.Get(context.Background())
	assert.ErrorContains(t, err, "get stats: node memory: meminfo: no MemTotal")

	p, err = stats.NewLinux(stats.LinuxOptions{Runtime: rt, ProcRoot: "testdata/v2/proc", CgroupRoot: "testdata/v2/cgroup", PodsCgroup: "../escape", AllocatableMemoryBytes: Gi})
	require.NoError(t, err)
	_, err = p.Get(context.Background())
	assert.ErrorContains(t, err, `pods cgroup "../escape": not a relative path inside the hierarchy`)
}

func TestLinuxPodsFromCRIAndDisk(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1.36"}})
	defer rt.Close()

	run := func(name, uid string) (string, string) {
		sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid}}
		sid, err := rt.RunPodSandbox(ctx, sb, "")
		require.NoError(t, err)
		cid, err := rt.CreateContainer(ctx, sid, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: "busybox:1.36"},
			Labels:   map[string]string{cri.PodUIDLabel: uid, cri.PodNameLabel: name, cri.PodNamespaceLabel: "default", cri.ContainerNameLabel: "app"},
		}, sb)
		require.NoError(t, err)
		require.NoError(t, rt.StartContainer(ctx, cid))
		return sid, cid
	}
	sid, cid := run("web", "uid-web")
	_, _ = run("../evil", "../uid-evil")

	u := func(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }
	require.NoError(t, rt.SetContainerStats(cid, &runtimeapi.ContainerStats{
		Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: u(300 << 20)},
		WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: u(5 << 20), InodesUsed: u(40)},
	}))
	require.NoError(t, rt.SetPodSandboxStats(sid, &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{
		Memory:  &runtimeapi.MemoryUsage{WorkingSetBytes: u(320 << 20)},
		Process: &runtimeapi.ProcessUsage{ProcessCount: u(7)},
	}}))

	rootDir, logsDir := t.TempDir(), t.TempDir()
	write := func(path string, size int) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, make([]byte, size), 0o644))
	}
	write(filepath.Join(logsDir, "default_web_uid-web", "app", "0.log"), 64<<10)
	write(filepath.Join(rootDir, "pods", "uid-web", "volumes", "kubernetes.io~empty-dir", "cache", "a"), 128<<10)
	write(filepath.Join(rootDir, "pods", "uid-web", "volumes", "kubernetes.io~empty-dir", "cache", "sub", "b"), 128<<10)
	// A symlink out of the volume is not followed.
	require.NoError(t, os.Symlink(logsDir, filepath.Join(rootDir, "pods", "uid-web", "volumes", "kubernetes.io~empty-dir", "cache", "link")))

	p, err := stats.NewLinux(stats.LinuxOptions{Runtime: rt, ProcRoot: "testdata/v2/proc", CgroupRoot: "testdata/v2/cgroup", RootDir: rootDir, PodLogsDir: logsDir, Clock: clk})
	require.NoError(t, err)
	s, err := p.Get(ctx)
	require.NoError(t, err)

	byUID := map[string]stats.PodStats{}
	for _, ps := range s.Pods {
		byUID[string(ps.UID)] = ps
	}
	web := byUID["uid-web"]
	assert.Equal(t, "web", web.Name)
	require.NotNil(t, web.Memory)
	assert.Equal(t, uint64(320<<20), web.Memory.WorkingSetBytes, "pod memory from the sandbox")
	require.NotNil(t, web.ProcessCount)
	assert.Equal(t, uint64(7), *web.ProcessCount)
	require.Len(t, web.Containers, 1)
	c := web.Containers[0]
	assert.Equal(t, "app", c.Name)
	assert.Equal(t, uint64(300<<20), c.Memory.WorkingSetBytes)
	assert.Equal(t, uint64(5<<20), c.Rootfs.UsedBytes)
	assert.Equal(t, uint64(40), c.Rootfs.InodesUsed)
	require.NotNil(t, c.Logs)
	assert.GreaterOrEqual(t, c.Logs.UsedBytes, uint64(64<<10))
	assert.Equal(t, uint64(2), c.Logs.InodesUsed, "the container's log dir and its file")
	require.Len(t, web.Volumes, 1)
	assert.Equal(t, "cache", web.Volumes[0].Name)
	assert.GreaterOrEqual(t, web.Volumes[0].UsedBytes, uint64(256<<10))
	assert.Less(t, web.Volumes[0].UsedBytes, uint64(1<<20), "the symlink to the logs is not followed")
	assert.Equal(t, uint64(5), web.Volumes[0].InodesUsed, "cache, a, sub, b, link")

	evil := byUID["../uid-evil"]
	assert.Nil(t, evil.Containers[0].Logs, "a UID that could escape gets no disk figures")
	assert.Empty(t, evil.Volumes)
	assert.NoError(t, s.Incomplete)

	// containerd fails the whole sandbox list when one sandbox has no
	// metrics: the pods are then measured from their containers.
	rt.InjectFault(fake.ListPodSandboxStats, fake.Fault{Err: errors.New(`failed to obtain metrics for sandbox "x"`)})
	s, err = p.Get(ctx)
	require.NoError(t, err)
	assert.ErrorContains(t, s.Incomplete, "failed to obtain metrics for sandbox")
	byUID = map[string]stats.PodStats{}
	for _, ps := range s.Pods {
		byUID[string(ps.UID)] = ps
	}
	web = byUID["uid-web"]
	require.NotNil(t, web.Memory)
	assert.Equal(t, uint64(300<<20), web.Memory.WorkingSetBytes, "pod memory from its containers")
	assert.Nil(t, web.ProcessCount)
	require.Len(t, web.Volumes, 1, "its volumes are still measured")
	rt.InjectFault(fake.ListContainerStats, fake.Fault{Err: errors.New("down")})
	_, err = p.Get(ctx)
	assert.ErrorContains(t, err, "list container stats")

	// A runtime without any stats method: the node alone, no pod measured,
	// and its images taken to be on nodefs.
	for _, m := range []fake.Method{fake.ListPodSandboxStats, fake.ListContainerStats, fake.ImageFsInfo} {
		rt.InjectFault(m, fake.Fault{Err: fmt.Errorf("%s: %w", m, cri.ErrUnimplemented)})
	}
	s, err = p.Get(ctx)
	require.NoError(t, err)
	assert.Empty(t, s.Pods)
	assert.ErrorIs(t, s.Incomplete, cri.ErrUnimplemented)
	require.NotNil(t, s.Node.ImageFs)
	assert.False(t, s.Node.DedicatedImageFs)
}

// TestLinuxRealMeminfo reads this machine's /proc/meminfo and cgroups and
// checks only that the figures are plausible.
func TestLinuxRealMeminfo(t *testing.T) {
	rt := fake.New(fake.Options{})
	defer rt.Close()
	p, err := stats.NewLinux(stats.LinuxOptions{Runtime: rt, RootDir: t.TempDir()})
	require.NoError(t, err)
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	m := s.Node.Memory
	require.NotNil(t, m)
	total := m.AvailableBytes + m.WorkingSetBytes
	assert.Greater(t, total, uint64(64<<20), "more than 64Mi of memory")
	assert.Less(t, total, uint64(64<<40), "less than 64Ti of memory")
	assert.Positive(t, m.WorkingSetBytes)
	assert.Positive(t, s.Node.Rlimit.MaxPID)
	assert.Positive(t, s.Node.Rlimit.NumOfRunningProcesses)
	assert.Positive(t, s.Node.Fs.Inodes)
}

// TestLinuxVolumeStatsPeriod: emptyDir volumes are walked when a pod is
// first seen and then once per period plus up to one period of jitter, as
// upstream's volume stats; a negative period walks them at every Get.
func TestLinuxVolumeStatsPeriod(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1.36"}})
	defer rt.Close()
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}
	_, err := rt.RunPodSandbox(ctx, sb, "")
	require.NoError(t, err)
	rootDir := t.TempDir()
	vol := filepath.Join(rootDir, "pods", "uid-web", "volumes", "kubernetes.io~empty-dir", "cache")
	require.NoError(t, os.MkdirAll(vol, 0o755))
	fill := func(name string) {
		require.NoError(t, os.WriteFile(filepath.Join(vol, name), make([]byte, 256<<10), 0o644))
	}
	usage := func(p *stats.Linux) uint64 {
		s, err := p.Get(ctx)
		require.NoError(t, err)
		for _, ps := range s.Pods {
			if ps.UID == "uid-web" && len(ps.Volumes) == 1 {
				return ps.Volumes[0].UsedBytes
			}
		}
		t.Fatal("no volume figure for uid-web")
		return 0
	}
	opts := stats.LinuxOptions{Runtime: rt, ProcRoot: "testdata/v2/proc", CgroupRoot: "testdata/v2/cgroup", RootDir: rootDir, PodLogsDir: t.TempDir(), Clock: clk}
	p, err := stats.NewLinux(opts)
	require.NoError(t, err)

	fill("a")
	first := usage(p)
	assert.GreaterOrEqual(t, first, uint64(256<<10), "measured when first seen")
	fill("b")
	clk.Step(59 * time.Second)
	assert.Equal(t, first, usage(p), "not walked again within the period")
	clk.Step(61 * time.Second) // two periods in all: past any jitter
	assert.GreaterOrEqual(t, usage(p), first+256<<10)

	opts.VolumeStatsPeriod = -1
	every, err := stats.NewLinux(opts)
	require.NoError(t, err)
	before := usage(every)
	fill("c")
	assert.GreaterOrEqual(t, usage(every), before+256<<10, "a negative period walks at every Get")
}

// TestLinuxSplitContainerFs: a runtime that reports its writable layers on
// another filesystem than its images gives the summary a container
// filesystem of its own, with the runtime's usage; one that reports a
// single filesystem leaves it nil.
func TestLinuxSplitContainerFs(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox"}})
	defer rt.Close()
	root := filepath.Join("testdata", "v2")
	p, err := stats.NewLinux(stats.LinuxOptions{Runtime: rt, ProcRoot: filepath.Join(root, "proc"), CgroupRoot: filepath.Join(root, "cgroup"),
		RootDir: t.TempDir(), PodLogsDir: t.TempDir(), Clock: clk})
	require.NoError(t, err)
	s, err := p.Get(context.Background())
	require.NoError(t, err)
	assert.Nil(t, s.Node.ContainerFs)
	assert.False(t, s.Node.SplitContainerFs)

	// Mountpoints this process cannot see: both taken to be on nodefs.
	rt.SetFilesystems(fake.Filesystems{Images: "/nonexistent/images", Containers: "/nonexistent/containers"})
	s, err = p.Get(context.Background())
	require.NoError(t, err)
	require.NotNil(t, s.Node.ContainerFs)
	assert.True(t, s.Node.SplitContainerFs)
	assert.Equal(t, s.Node.Fs.CapacityBytes, s.Node.ContainerFs.CapacityBytes)
	assert.Zero(t, s.Node.ContainerFs.UsedBytes, "no container has a writable layer")
	assert.EqualValues(t, 1<<20, s.Node.ImageFs.UsedBytes, "the image")
}
