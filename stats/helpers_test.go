package stats_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/stats/statstest"
)

var (
	t0   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	boot = t0.Add(-time.Hour)
)

const (
	snapshotter = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs" // the fake's image filesystem
	podsCgroup  = "/kubepods"
	kubeletCg   = "/system.slice/kubelet.service"
)

// node is a node on the fake runtime and a scripted host, sharing a fake
// clock, with real directories for the kubelet's root and the pod logs.
type node struct {
	t                testing.TB
	clk              *clocktesting.FakeClock
	rt               *fake.Runtime
	host             *statstest.Host
	rootDir, logsDir string
}

func newNode(t testing.TB) *node {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox"}, UsageRules: []fake.UsageRule{
		{Name: "app", Usage: fake.Usage{NanoCores: 250_000_000, MemoryBytes: 64 << 20}},
		{Name: "sidecar", Usage: fake.Usage{NanoCores: 50_000_000, MemoryBytes: 16 << 20}},
	}})
	t.Cleanup(rt.Close)
	rootDir, logsDir := t.TempDir(), t.TempDir()
	host := &statstest.Host{
		Clock: clk, BootTime: boot, NanoCores: 1_200_000_000, MemoryCapacity: 8 << 30, MemoryWorkingSet: 3 << 30,
		MaxPID: 4194304, Processes: 512,
		Filesystems: map[string]stats.FsInfo{
			rootDir:     {Device: 1, CapacityBytes: 100 << 30, AvailableBytes: 40 << 30, UsedBytes: 60 << 30, Inodes: 1000, InodesFree: 600},
			logsDir:     {Device: 1, CapacityBytes: 100 << 30, AvailableBytes: 40 << 30, UsedBytes: 60 << 30, Inodes: 1000, InodesFree: 600},
			snapshotter: {Device: 3, CapacityBytes: 200 << 30, AvailableBytes: 150 << 30, UsedBytes: 50 << 30, Inodes: 5000, InodesFree: 4000},
		},
		Cgroups: map[string]statstest.Cgroup{
			podsCgroup: {NanoCores: 300_000_000, MemoryBytes: 80 << 20, Start: boot.Add(time.Minute)},
			kubeletCg:  {NanoCores: 20_000_000, MemoryBytes: 40 << 20, Start: boot.Add(2 * time.Minute)},
		},
	}
	return &node{t: t, clk: clk, rt: rt, host: host, rootDir: rootDir, logsDir: logsDir}
}

// provider returns a Provider of the node with opts' zero fields filled
// in.
func (n *node) provider(opts stats.Options) *stats.Provider {
	n.t.Helper()
	if opts.NodeName == "" {
		opts.NodeName = "node-1"
	}
	opts.Runtime, opts.Host, opts.Clock = n.rt, n.host, n.clk
	opts.RootDir, opts.PodLogsDir = n.rootDir, n.logsDir
	p, err := stats.New(opts)
	require.NoError(n.t, err)
	return p
}

// runPod runs a sandbox for namespace/name and starts one container per
// name, returning the sandbox's ID and the containers' IDs.
func (n *node) runPod(namespace, name string, containers ...string) (string, []string) {
	n.t.Helper()
	ctx := context.Background()
	uid := "uid-" + name
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: uid},
		Labels:   map[string]string{cri.PodUIDLabel: uid, cri.PodNameLabel: name, cri.PodNamespaceLabel: namespace},
	}
	sid, err := n.rt.RunPodSandbox(ctx, cfg, "")
	require.NoError(n.t, err)
	var ids []string
	for _, c := range containers {
		ids = append(ids, n.start(sid, cfg, c, 0))
	}
	return sid, ids
}

// start creates and starts attempt of container name in a sandbox.
func (n *node) start(sid string, cfg *runtimeapi.PodSandboxConfig, name string, attempt uint32) string {
	n.t.Helper()
	ctx := context.Background()
	md := cfg.GetMetadata()
	id, err := n.rt.CreateContainer(ctx, sid, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Labels: map[string]string{
			cri.PodUIDLabel: md.GetUid(), cri.PodNameLabel: md.GetName(), cri.PodNamespaceLabel: md.GetNamespace(), cri.ContainerNameLabel: name,
		},
	}, cfg)
	require.NoError(n.t, err)
	require.NoError(n.t, n.rt.StartContainer(ctx, id))
	return id
}

// write creates a file of size bytes under the node's directories.
func (n *node) write(path string, size int) {
	n.t.Helper()
	require.NoError(n.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(n.t, os.WriteFile(path, make([]byte, size), 0o644))
}

func (n *node) volume(uid, plugin, name string) string {
	return filepath.Join(n.rootDir, "pods", uid, "volumes", plugin, name)
}

func (n *node) podLogs(namespace, name string) string {
	return filepath.Join(n.logsDir, namespace+"_"+name+"_uid-"+name)
}
