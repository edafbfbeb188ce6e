//go:build linux

package stats_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/stats"
)

// writeTree writes files (path → content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

const netDev = "Inter-|   Receive                                                |  Transmit\n" +
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
	"    lo: 140 2 0 0 0 0 0 0 140 2 0 0 0 0 0 0\n" +
	"  eth0: 17532 203 0 3 0 0 0 0 9604 117 0 1 0 0 0 0\n"

// cgroupHost is a host with pod default/web's cgroups (its sandbox sb1,
// its container app with a CPU limit, and a container the runtime does
// not list) on cgroup v1 with cgroupfs or v2 with systemd, the processes
// of the sandbox (pid 10, whose namespace is the pod's) and of app (pid
// 20, whose /proc cannot be read), and sysfs naming 254:0 vda.
func cgroupHost(t *testing.T, v2 bool) (cgroupRoot, procRoot, sysRoot, pod string) {
	root := t.TempDir()
	cgroupRoot, procRoot, sysRoot = filepath.Join(root, "cgroup"), filepath.Join(root, "proc"), filepath.Join(root, "sys")
	files := map[string]string{}
	cpu, mem, blkio := func(rel string) string { return filepath.Join("cpu", rel) }, func(rel string) string { return filepath.Join("memory", rel) },
		func(rel string) string { return filepath.Join("blkio", rel) }
	sandbox, app, other := "sb1", "app1", "zz9"
	pod = "/kubepods/burstable/pod-web"
	if v2 {
		cpu, mem, blkio = func(rel string) string { return rel }, func(rel string) string { return rel }, func(rel string) string { return rel }
		pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod_web.slice"
		sandbox, app, other = "cri-containerd-sb1.scope", "cri-containerd-app1.scope", "cri-containerd-zz9.scope"
		files["cgroup.controllers"] = "cpu io memory pids\n"
	}
	p := pod[1:]
	quota, noQuota, stat := "50000\n", "-1\n", "nr_periods 40\nnr_throttled 5\nthrottled_time 2500000000\n"
	memStat, ctrMemStat := "total_cache 8192\n", "total_cache 4096\n"
	if v2 {
		quota, noQuota, stat = "50000 100000\n", "max 100000\n", "usage_usec 1\nnr_periods 40\nnr_throttled 5\nthrottled_usec 2500000\n"
		memStat, ctrMemStat = "anon 1\nfile 8192\n", "anon 1\nfile 4096\n"
	}
	for rel, q := range map[string]string{p: noQuota, p + "/" + sandbox: noQuota, p + "/" + app: quota, p + "/" + other: noQuota} {
		files[cpu(rel+"/cpu.max")] = q
		if !v2 {
			delete(files, cpu(rel+"/cpu.max"))
			files[cpu(rel+"/cpu.cfs_quota_us")] = q
		}
		files[cpu(rel+"/cpu.stat")] = stat
		files[cpu(rel+"/cgroup.procs")] = ""
		files[mem(rel+"/memory.stat")] = ctrMemStat
	}
	files[mem(p+"/memory.stat")] = memStat
	files[cpu(p+"/"+app+"/cgroup.procs")] = "20\n"
	files[cpu(p+"/"+sandbox+"/cgroup.procs")] = "10\n"
	if v2 {
		files[p+"/io.stat"] = "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2\n"
	} else {
		files[blkio(p+"/blkio.throttle.io_serviced_recursive")] = "254:0 Read 1\n254:0 Write 2\nTotal 3\n"
		files[blkio(p+"/blkio.throttle.io_service_bytes_recursive")] = "254:0 Read 4096\n254:0 Write 8192\nTotal 12288\n"
	}
	writeTree(t, cgroupRoot, files)
	writeTree(t, procRoot, map[string]string{"10/net/dev": netDev, "20/net/dev": strings.Replace(netDev, "eth0", "eth9", 1)})
	require.NoError(t, os.MkdirAll(filepath.Join(sysRoot, "dev", "block"), 0o755))
	require.NoError(t, os.Symlink("../../devices/virtio1/block/vda", filepath.Join(sysRoot, "dev", "block", "254:0")))
	return cgroupRoot, procRoot, sysRoot, pod
}

func TestCgroupReader(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	web := stats.PodUsage{Ref: statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-web"}, SandboxID: "sb1",
		Containers: []stats.ContainerUsage{{ID: "app1", Name: "app"}, {ID: "gone", Name: "gone"}}}
	stray := stats.PodUsage{Ref: statsv1alpha1.PodReference{Name: "stray", Namespace: "default", UID: "uid-stray"}}
	for _, v2 := range []bool{false, true} {
		name := map[bool]string{false: "v1 cgroupfs", true: "v2 systemd"}[v2]
		t.Run(name, func(t *testing.T) {
			cgroupRoot, procRoot, sysRoot, pod := cgroupHost(t, v2)
			r, err := stats.NewCgroupReader(stats.CgroupReaderOptions{CgroupRoot: cgroupRoot, ProcRoot: procRoot, SysRoot: sysRoot,
				Clock: clocktesting.NewFakePassiveClock(at), Pods: stats.PodCgroupsFunc(func() (map[types.UID]string, error) {
					return map[types.UID]string{"uid-web": pod, "uid-stray": "/kubepods/../etc"}, nil
				})})
			require.NoError(t, err)
			got := r.CgroupStats(context.Background(), []stats.PodUsage{web, stray, {Ref: statsv1alpha1.PodReference{UID: "uid-none"}}})
			require.Len(t, got, 1, "only web: stray's cgroup path is refused, none has no cgroup")
			s := got["uid-web"]
			require.NotNil(t, s)
			assert.Equal(t, pod, s.Cgroup)

			ops := map[string]uint64{"Read": 1, "Write": 2}
			assert.Equal(t, stats.CgroupStats{Time: at, MemoryCacheBytes: ptr(uint64(8192)),
				IO: []stats.DeviceIO{{Device: "/dev/vda", Major: 254, Bytes: map[string]uint64{"Read": 4096, "Write": 8192}, Ops: ops}}},
				s.Pod, "no CPU quota on the pod: no CFS figures; v1's closing Total line is no device")
			require.Len(t, s.Containers, 1, "gone has no cgroup; the container the runtime did not list is not read")
			assert.Equal(t, stats.CgroupStats{Time: at, MemoryCacheBytes: ptr(uint64(4096)),
				CFS: &stats.CFSStats{Periods: 40, ThrottledPeriods: 5, ThrottledTime: 2500 * time.Millisecond}}, s.Containers["app1"])
			assert.Equal(t, &stats.PodNetworkStats{Time: at, Interfaces: []stats.InterfaceStats{{Name: "eth0",
				RxBytes: 17532, RxPackets: 203, RxDropped: 3, TxBytes: 9604, TxPackets: 117, TxDropped: 1}}}, s.Network,
				"through the sandbox's process first, loopback left out")
		})
	}
}

func TestCgroupReaderReadsWhatIsThere(t *testing.T) {
	web := stats.PodUsage{Ref: statsv1alpha1.PodReference{UID: "uid-web"}, SandboxID: "sb1", Containers: []stats.ContainerUsage{{ID: "app1"}}}
	cgroupRoot, procRoot, _, pod := cgroupHost(t, true)
	p := filepath.Join(cgroupRoot, pod)
	require.NoError(t, os.Remove(filepath.Join(p, "memory.stat")))
	require.NoError(t, os.WriteFile(filepath.Join(p, "io.stat"), []byte("garbage\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(p, "cri-containerd-app1.scope", "cpu.stat"), []byte("usage_usec 1\n"), 0o644))
	require.NoError(t, os.RemoveAll(filepath.Join(procRoot, "10")))
	require.NoError(t, os.RemoveAll(filepath.Join(procRoot, "20")))
	lister := func(m map[types.UID]string, err error) stats.PodCgroupLister {
		return stats.PodCgroupsFunc(func() (map[types.UID]string, error) { return m, err })
	}
	r, err := stats.NewCgroupReader(stats.CgroupReaderOptions{CgroupRoot: cgroupRoot, ProcRoot: procRoot, Pods: lister(map[types.UID]string{"uid-web": pod}, nil)})
	require.NoError(t, err)
	s := r.CgroupStats(context.Background(), []stats.PodUsage{web})["uid-web"]
	require.NotNil(t, s)
	assert.Nil(t, s.Pod.MemoryCacheBytes, "no memory.stat")
	assert.Empty(t, s.Pod.IO, "io.stat does not parse")
	assert.Nil(t, s.Containers["app1"].CFS, "cpu.stat without CFS counters")
	assert.NotNil(t, s.Containers["app1"].MemoryCacheBytes)
	assert.Nil(t, s.Network, "no process of the pod has a readable /proc")

	r, err = stats.NewCgroupReader(stats.CgroupReaderOptions{CgroupRoot: cgroupRoot, Pods: lister(nil, errors.New("not started"))})
	require.NoError(t, err)
	assert.Nil(t, r.CgroupStats(context.Background(), []stats.PodUsage{web}), "no pod cgroups: nothing")
	r, err = stats.NewCgroupReader(stats.CgroupReaderOptions{CgroupRoot: t.TempDir(), Pods: lister(map[types.UID]string{"uid-web": pod}, nil)})
	require.NoError(t, err)
	assert.Empty(t, r.CgroupStats(context.Background(), []stats.PodUsage{web}), "a pod cgroup that is not there")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Empty(t, r.CgroupStats(ctx, []stats.PodUsage{web}), "the scrape ended")

	_, err = stats.NewCgroupReader(stats.CgroupReaderOptions{})
	assert.ErrorIs(t, err, stats.ErrMissingPodCgroups)
}
