package stats_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/stats/statstest"
)

func TestNew(t *testing.T) {
	rt := fake.New(fake.Options{})
	defer rt.Close()
	host := &statstest.Host{}
	cases := []struct {
		name    string
		opts    stats.Options
		wantErr error
		wantMsg string
	}{
		{name: "no runtime", opts: stats.Options{NodeName: "n", Host: host}, wantErr: stats.ErrMissingRuntime},
		{name: "no node name", opts: stats.Options{Runtime: rt, Host: host}, wantErr: stats.ErrMissingNodeName},
		{name: "pods cgroup escapes", opts: stats.Options{NodeName: "n", Runtime: rt, Host: host, PodsCgroup: "/kubepods/../../etc"},
			wantErr: stats.ErrInvalidOptions, wantMsg: `PodsCgroup "/kubepods/../../etc"`},
		{name: "kubelet cgroup empty element", opts: stats.Options{NodeName: "n", Runtime: rt, Host: host, KubeletCgroup: "/system.slice//kubelet"},
			wantErr: stats.ErrInvalidOptions, wantMsg: "KubeletCgroup"},
		{name: "valid", opts: stats.Options{NodeName: "n", Runtime: rt, Host: host, PodsCgroup: "kubepods.slice", RuntimeCgroup: "/system.slice/containerd.service"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := stats.New(tc.opts)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.NotNil(t, p)
				return
			}
			assert.ErrorIs(t, err, tc.wantErr)
			assert.ErrorContains(t, err, tc.wantMsg)
		})
	}
}

func podsByName(s *statsv1alpha1.Summary) map[string]statsv1alpha1.PodStats {
	out := map[string]statsv1alpha1.PodStats{}
	for _, p := range s.Pods {
		out[p.PodRef.Namespace+"/"+p.PodRef.Name] = p
	}
	return out
}

func containerNames(p statsv1alpha1.PodStats) []string {
	var out []string
	for _, c := range p.Containers {
		out = append(out, c.Name)
	}
	return out
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestSummaryFull checks the upstream semantics the golden file shows, one
// by one.
func TestSummaryFull(t *testing.T) {
	n := newNode(t)
	scenario(n)
	p := n.provider(stats.Options{PodsCgroup: podsCgroup, KubeletCgroup: kubeletCg, RuntimeCgroup: "/system.slice/containerd.service"})
	ctx := context.Background()
	first, err := p.Summary(ctx, false)
	require.NoError(t, err)
	assert.Nil(t, first.Node.CPU.UsageNanoCores, "one sample of the node: no rate yet")
	n.clk.Step(10 * time.Second)
	s, err := p.Summary(ctx, false)
	require.NoError(t, err)

	node := s.Node
	assert.Equal(t, "node-1", node.NodeName)
	assert.True(t, node.StartTime.Time.Equal(boot), "the node started when it booted")
	assert.Equal(t, uint64(1_200_000_000), deref(node.CPU.UsageNanoCores), "the host's rate, from two cumulative samples")
	assert.Equal(t, uint64(5<<30), deref(node.Memory.AvailableBytes))
	assert.Equal(t, uint64(100<<30), deref(node.Fs.CapacityBytes), "nodefs: the root dir's filesystem")
	assert.Equal(t, uint64(400), deref(node.Fs.InodesUsed))
	require.NotNil(t, node.Runtime)
	assert.Equal(t, uint64(200<<30), deref(node.Runtime.ImageFs.CapacityBytes), "imagefs: the snapshotter's filesystem")
	assert.Equal(t, node.Runtime.ImageFs.UsedBytes, node.Runtime.ContainerFs.UsedBytes, "containerfs is imagefs, as upstream's CRI provider")
	assert.Equal(t, int64(4194304), *node.Rlimit.MaxPID)

	var sys []string
	for _, c := range node.SystemContainers {
		sys = append(sys, c.Name)
	}
	assert.Equal(t, []string{"kubelet", "pods"}, sys, "the runtime cgroup cannot be measured: left out")
	assert.True(t, node.SystemContainers[0].StartTime.Time.Equal(t0), "the kubelet started with the provider")
	assert.True(t, node.SystemContainers[1].StartTime.Time.Equal(boot.Add(time.Minute)), "the pods cgroup's creation")
	assert.Equal(t, uint64(300_000_000), deref(node.SystemContainers[1].CPU.UsageNanoCores))

	pods := podsByName(s)
	require.Len(t, pods, 2, "default/old's sandbox is stopped")
	web, dns := pods["default/web"], pods["kube-system/dns"]
	assert.Equal(t, "uid-web", web.PodRef.UID)
	assert.Equal(t, []string{"app", "sidecar"}, containerNames(web), "the exited init container and app's first attempt are dropped")
	assert.Equal(t, []string{"dns"}, containerNames(dns))
	app := web.Containers[0]
	assert.Equal(t, uint64(250_000_000), deref(app.CPU.UsageNanoCores), "the runtime's rate")
	assert.Equal(t, uint64(64<<20), deref(app.Memory.WorkingSetBytes))
	assert.Equal(t, uint64(300_000_000), deref(web.CPU.UsageNanoCores), "the sandbox's")
	assert.Equal(t, uint64(80<<20), deref(web.Memory.WorkingSetBytes))
	assert.Equal(t, uint64(3), deref(web.ProcessStats.ProcessCount))
	assert.Equal(t, "eth0", web.Network.Name)
	assert.Zero(t, deref(dns.Containers[0].CPU.UsageNanoCores), "no usage rule: zero")

	assert.Equal(t, uint64(1300), deref(app.Logs.UsedBytes), "the files of the container's log directory")
	assert.Equal(t, uint64(2), deref(app.Logs.InodesUsed))
	assert.Equal(t, uint64(100<<30), deref(app.Logs.CapacityBytes), "logs are on nodefs")
	assert.Equal(t, uint64(200<<30), deref(app.Rootfs.CapacityBytes), "the writable layer is on the image filesystem")
	assert.Nil(t, dns.Containers[0].Logs, "no log directory")

	var vols []string
	for _, v := range web.VolumeStats {
		vols = append(vols, v.Name)
	}
	assert.Equal(t, []string{"cache", "cfg", "mem", "token"}, vols, "ephemeral volumes first, then the others")
	assert.Equal(t, uint64(4096), deref(web.VolumeStats[0].UsedBytes))
	assert.Equal(t, uint64(1<<30), deref(web.VolumeStats[2].CapacityBytes), "the memory emptyDir is its own tmpfs")

	// 1300+500 logs, 4096 cache, 10 cfg, 7 pod log, 64 etc-hosts; the
	// writable layers are empty, mem and token are not ephemeral storage.
	assert.Equal(t, uint64(5977), deref(web.EphemeralStorage.UsedBytes))
	assert.Equal(t, uint64(2+1+2+2+1+1), deref(web.EphemeralStorage.InodesUsed))
	assert.Equal(t, uint64(40<<30), deref(web.EphemeralStorage.AvailableBytes))
	assert.Nil(t, dns.VolumeStats)
	assert.Equal(t, uint64(0), deref(dns.EphemeralStorage.UsedBytes))
}

// TestSummaryCPUAndMemory: the reduced summary has CPU and memory only,
// and measures no filesystem.
func TestSummaryCPUAndMemory(t *testing.T) {
	n := newNode(t)
	scenario(n)
	p := n.provider(stats.Options{PodsCgroup: podsCgroup})
	n.rt.ResetCalls()
	s, err := p.Summary(context.Background(), true)
	require.NoError(t, err)

	assert.Zero(t, n.host.CallsOf(statstest.MethodFilesystem))
	assert.Zero(t, n.host.CallsOf(statstest.MethodDiskUsage))
	assert.Empty(t, n.rt.CallsOf(fake.ImageFsInfo))
	assert.Empty(t, n.rt.CallsOf(fake.ListContainerStats), "the sandbox stats hold the containers'")

	node := s.Node
	assert.NotNil(t, node.CPU)
	assert.NotNil(t, node.Memory)
	assert.Nil(t, node.Fs)
	assert.Nil(t, node.Runtime)
	assert.Nil(t, node.Network)
	assert.Nil(t, node.Rlimit)
	require.Len(t, node.SystemContainers, 1)
	require.Len(t, s.Pods, 2)
	for _, pod := range s.Pods {
		assert.NotNil(t, pod.CPU, pod.PodRef.Name)
		assert.NotNil(t, pod.Memory, pod.PodRef.Name)
		assert.Nil(t, pod.VolumeStats, pod.PodRef.Name)
		assert.Nil(t, pod.EphemeralStorage, pod.PodRef.Name)
		for _, c := range pod.Containers {
			assert.NotNil(t, c.CPU, c.Name)
			assert.NotNil(t, c.Memory, c.Name)
			assert.Nil(t, c.Rootfs, c.Name)
			assert.Nil(t, c.Logs, c.Name)
		}
	}
	assert.Zero(t, p.VolumeWalks())
}

// TestSummaryFallback: when the runtime cannot list sandbox stats, pods are
// measured from their containers, as upstream's fallback.
func TestSummaryFallback(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{name: "unimplemented", err: fmt.Errorf("ListPodSandboxStats: %w", cri.ErrUnimplemented)},
		// containerd 1.7 fails the whole list when one sandbox has no metrics.
		{name: "failed", err: errors.New(`failed to obtain metrics for sandbox "x"`)},
	}
	for _, tc := range cases {
		for _, only := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/only=%v", tc.name, only), func(t *testing.T) {
				n := newNode(t)
				scenario(n)
				n.rt.InjectFault(fake.ListPodSandboxStats, fake.Fault{Err: tc.err})
				p := n.provider(stats.Options{})
				s, err := p.Summary(context.Background(), only)
				require.NoError(t, err)
				pods := podsByName(s)
				require.Len(t, pods, 2)
				web := pods["default/web"]
				assert.Equal(t, []string{"app", "sidecar"}, containerNames(web))
				assert.Equal(t, uint64(300_000_000), deref(web.CPU.UsageNanoCores), "the containers' sum")
				assert.Equal(t, uint64(80<<20), deref(web.Memory.WorkingSetBytes))
				assert.Nil(t, web.Network, "unknown without sandbox stats")
				assert.Nil(t, web.ProcessStats)
				assert.Equal(t, !only, web.EphemeralStorage != nil)
			})
		}
	}

	n := newNode(t)
	scenario(n)
	n.rt.InjectFault(fake.ListPodSandboxStats, fake.Fault{Err: errors.New("down")})
	n.rt.InjectFault(fake.ListContainerStats, fake.Fault{Err: errors.New("down too")})
	_, err := n.provider(stats.Options{}).Summary(context.Background(), true)
	assert.ErrorContains(t, err, "list pod stats")
	assert.ErrorContains(t, err, "down too")
}

// TestSummaryRuntimeWithoutStats: a runtime that implements none of the
// stats methods (each answers Unimplemented) gets a summary of the node
// with no pods and no runtime filesystem, rather than none.
func TestSummaryRuntimeWithoutStats(t *testing.T) {
	for _, only := range []bool{false, true} {
		t.Run(fmt.Sprintf("only=%v", only), func(t *testing.T) {
			n := newNode(t)
			scenario(n)
			for _, m := range []fake.Method{fake.ListPodSandboxStats, fake.ListContainerStats, fake.ImageFsInfo} {
				n.rt.InjectFault(m, fake.Fault{Err: fmt.Errorf("%s: %w", m, cri.ErrUnimplemented)})
			}
			s, err := n.provider(stats.Options{}).Summary(context.Background(), only)
			require.NoError(t, err)
			assert.Empty(t, s.Pods)
			assert.Nil(t, s.Node.Runtime)
			assert.Equal(t, "node-1", s.Node.NodeName, "the node is measured")
		})
	}
}

func TestSummaryErrors(t *testing.T) {
	cases := []struct {
		name  string
		only  bool
		setup func(n *node)
		want  string
	}{
		{name: "node", setup: func(n *node) { n.host.NodeErr = errors.New("no proc") }, want: "get node stats: no proc"},
		{name: "nodefs", setup: func(n *node) { delete(n.host.Filesystems, n.rootDir) }, want: "get rootFs stats"},
		{name: "image fs info", setup: func(n *node) { n.rt.InjectFault(fake.ImageFsInfo, fake.Fault{Err: errors.New("busy")}) }, want: "get imageFs stats"},
		{name: "no image filesystem", setup: func(n *node) { n.rt.SetImageFsInfo(&runtimeapi.ImageFsInfoResponse{}) }, want: "imageFs information is unavailable"},
		{name: "sandboxes", only: true, setup: func(n *node) { n.rt.InjectFault(fake.ListPodSandbox, fake.Fault{Err: errors.New("gone")}) }, want: "list pod stats"},
		{name: "containers", only: true, setup: func(n *node) { n.rt.InjectFault(fake.ListContainers, fake.Fault{Err: errors.New("gone")}) }, want: "list pod stats"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			scenario(n)
			tc.setup(n)
			_, err := n.provider(stats.Options{}).Summary(context.Background(), tc.only)
			assert.ErrorContains(t, err, tc.want)
		})
	}

	// A context that ends is an error, not a fallback.
	n := newNode(t)
	scenario(n)
	ctx, cancel := context.WithCancel(context.Background())
	n.rt.InjectFault(fake.ListPodSandboxStats, fake.Fault{Hang: true})
	cancel()
	_, err := n.provider(stats.Options{}).Summary(ctx, true)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestSummaryImageFsNotVisible: a runtime whose filesystem this process
// cannot see still gets its usage reported, without a size.
func TestSummaryImageFsNotVisible(t *testing.T) {
	n := newNode(t)
	scenario(n)
	delete(n.host.Filesystems, snapshotter)
	s, err := n.provider(stats.Options{}).Summary(context.Background(), false)
	require.NoError(t, err)
	im := s.Node.Runtime.ImageFs
	assert.NotNil(t, im.UsedBytes)
	assert.Nil(t, im.CapacityBytes)
	web := podsByName(s)["default/web"]
	assert.NotNil(t, web.Containers[0].Rootfs.UsedBytes)
	assert.Nil(t, web.Containers[0].Rootfs.CapacityBytes)
}

// TestSummaryUnsafeNames: names from the runtime that would leave the log
// or volume directories get no disk figures.
func TestSummaryUnsafeNames(t *testing.T) {
	n := newNode(t)
	n.runPod("..", "evil", "app")
	n.write(filepath.Join(n.logsDir, "app", "0.log"), 10) // what "../" would reach
	s, err := n.provider(stats.Options{}).Summary(context.Background(), false)
	require.NoError(t, err)
	require.Len(t, s.Pods, 1)
	pod := s.Pods[0]
	assert.Equal(t, "..", pod.PodRef.Namespace)
	assert.Nil(t, pod.Containers[0].Logs)
	assert.Equal(t, uint64(0), deref(pod.EphemeralStorage.UsedBytes))
}

// TestSummaryVolumePeriod: volumes are walked when a pod is first seen and
// then once per period plus jitter; a gone pod's walk is forgotten.
func TestSummaryVolumePeriod(t *testing.T) {
	n := newNode(t)
	sid, _ := n.runPod("default", "web", "app")
	vol := n.volume("uid-web", "kubernetes.io~empty-dir", "cache")
	n.write(filepath.Join(vol, "a"), 100)
	p := n.provider(stats.Options{})
	used := func() uint64 {
		s, err := p.Summary(context.Background(), false)
		require.NoError(t, err)
		require.Len(t, s.Pods, 1)
		require.Len(t, s.Pods[0].VolumeStats, 1)
		return deref(s.Pods[0].VolumeStats[0].UsedBytes)
	}
	assert.Equal(t, uint64(100), used())
	n.write(filepath.Join(vol, "b"), 50)
	n.clk.Step(59 * time.Second)
	assert.Equal(t, uint64(100), used(), "within the period: the last walk")
	n.clk.Step(61 * time.Second)
	assert.Equal(t, uint64(150), used(), "two periods: past any jitter")
	assert.Equal(t, 1, p.VolumeWalks())

	require.NoError(t, n.rt.StopPodSandbox(context.Background(), sid))
	s, err := p.Summary(context.Background(), false)
	require.NoError(t, err)
	assert.Empty(t, s.Pods)
	assert.Zero(t, p.VolumeWalks(), "forgotten with the pod")
	assert.Equal(t, 0, p.CPUSamples()-1, "only the node's CPU sample is left")
}

// TestSummaryComputedContainerRate: a runtime that reports cumulative CPU
// only gets its rates computed per container and pod.
func TestSummaryComputedContainerRate(t *testing.T) {
	n := newNode(t)
	sid, ids := n.runPod("default", "web", "app")
	set := func(cpu time.Duration) {
		at := n.clk.Now().UnixNano()
		u := &runtimeapi.UInt64Value{Value: uint64(cpu)}
		require.NoError(t, n.rt.SetContainerStats(ids[0], &runtimeapi.ContainerStats{Cpu: &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: u}}))
		require.NoError(t, n.rt.SetPodSandboxStats(sid, &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{Cpu: &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: u}}}))
	}
	p := n.provider(stats.Options{})
	rates := func() (pod, ctr *uint64) {
		s, err := p.Summary(context.Background(), true)
		require.NoError(t, err)
		require.Len(t, s.Pods, 1)
		return s.Pods[0].CPU.UsageNanoCores, s.Pods[0].Containers[0].CPU.UsageNanoCores
	}
	set(0)
	pod, ctr := rates()
	assert.Nil(t, pod)
	assert.Nil(t, ctr)
	n.clk.Step(10 * time.Second)
	set(5 * time.Second)
	pod, ctr = rates()
	assert.Equal(t, uint64(500_000_000), deref(pod))
	assert.Equal(t, uint64(500_000_000), deref(ctr))
	assert.Equal(t, 3, p.CPUSamples(), "the node, the pod, the container")

	require.NoError(t, n.rt.StopContainer(context.Background(), ids[0], 0))
	_, _ = p.Summary(context.Background(), true)
	assert.Equal(t, 2, p.CPUSamples(), "the exited container's sample is forgotten")
}

// TestSummarySplitContainerFs: a runtime that keeps the writable layers on
// another filesystem than the images (KubeletSeparateDiskGC) has two in
// the summary: runtime.imageFs and runtime.containerFs, each with the
// runtime's usage and its own size.
func TestSummarySplitContainerFs(t *testing.T) {
	const images, containers = "/mnt/images", "/var/lib/containers/storage"
	cases := []struct {
		name      string
		fss       fake.Filesystems
		wantSplit bool
	}{
		{name: "one filesystem"},
		{name: "the same mountpoint named twice", fss: fake.Filesystems{Images: snapshotter, Containers: snapshotter}},
		{name: "split", fss: fake.Filesystems{Images: images, Containers: containers}, wantSplit: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			scenario(n)
			n.host.Filesystems[images] = stats.FsInfo{Device: 4, CapacityBytes: 50 << 30, AvailableBytes: 10 << 30, Inodes: 100, InodesFree: 90}
			n.host.Filesystems[containers] = stats.FsInfo{Device: 5, CapacityBytes: 30 << 30, AvailableBytes: 3 << 30, Inodes: 200, InodesFree: 20}
			n.rt.SetFilesystems(tc.fss)
			s, err := n.provider(stats.Options{}).Summary(context.Background(), false)
			require.NoError(t, err)
			rt := s.Node.Runtime
			require.NotNil(t, rt.ContainerFs)
			if !tc.wantSplit {
				assert.Equal(t, rt.ImageFs, rt.ContainerFs, "containerfs is imagefs")
				return
			}
			assert.Equal(t, uint64(50<<30), deref(rt.ImageFs.CapacityBytes))
			assert.Equal(t, uint64(10<<30), deref(rt.ImageFs.AvailableBytes))
			assert.Equal(t, uint64(30<<30), deref(rt.ContainerFs.CapacityBytes), "containerfs: the layers' filesystem")
			assert.Equal(t, uint64(3<<30), deref(rt.ContainerFs.AvailableBytes))
			assert.Equal(t, uint64(20), deref(rt.ContainerFs.InodesFree))
			assert.NotEqual(t, deref(rt.ImageFs.UsedBytes), uint64(0), "the images")
		})
	}
}
