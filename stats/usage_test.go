package stats_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/stats"
)

func u64(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

func ptr[T any](v T) *T { return &v }

// usageNode is a node with pod default/web (containers app, whose stats
// are set field by field, and bare, whose runtime reports CPU alone) and
// kube-system/idle (no container), plus a stopped sandbox, which is not
// measured. It returns the IDs of web's sandbox, app and bare.
func usageNode(t *testing.T) (*node, string, string, string) {
	n := newNode(t)
	ctx := context.Background()
	web, ids := n.runPod("default", "web", "app")
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}
	bare, err := n.rt.CreateContainer(ctx, web, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "bare"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox", UserSpecifiedImage: "busybox:1.36"},
	}, cfg)
	require.NoError(t, err)
	require.NoError(t, n.rt.StartContainer(ctx, bare))
	n.runPod("kube-system", "idle")
	old, _ := n.runPod("default", "old", "app")
	require.NoError(t, n.rt.StopPodSandbox(ctx, old))

	at := t0.Add(-time.Second).UnixNano()
	require.NoError(t, n.rt.SetContainerStats(ids[0], &runtimeapi.ContainerStats{
		Cpu:    &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: u64(2_500_000_000), Psi: criPSI(3)},
		Memory: &runtimeapi.MemoryUsage{Timestamp: at, UsageBytes: u64(100), WorkingSetBytes: u64(80), RssBytes: u64(60), PageFaults: u64(7), MajorPageFaults: u64(1)},
		Swap:   &runtimeapi.SwapUsage{Timestamp: at, SwapUsageBytes: u64(5)},
		Io:     &runtimeapi.IoUsage{Timestamp: at, Psi: criPSI(4)},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: snapshotter},
			UsedBytes: u64(4096), InodesUsed: u64(3)},
	}))
	require.NoError(t, n.rt.SetContainerStats(bare, &runtimeapi.ContainerStats{Cpu: &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: u64(1)}}))
	require.NoError(t, n.rt.SetPodSandboxStats(web, &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{
		Cpu:    &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: u64(3_000_000_000), UsageNanoCores: u64(9)},
		Memory: &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: u64(90)},
		Network: &runtimeapi.NetworkUsage{Timestamp: at,
			DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: u64(10), TxBytes: u64(20)},
			Interfaces: []*runtimeapi.NetworkInterfaceUsage{
				{Name: "eth0", RxBytes: u64(10), TxBytes: u64(20)},
				{Name: "net1", RxBytes: u64(30), RxErrors: u64(1), TxBytes: u64(40), TxErrors: u64(2)},
			}},
		Process: &runtimeapi.ProcessUsage{Timestamp: at, ProcessCount: u64(4)},
		Io:      &runtimeapi.IoUsage{Timestamp: at, Psi: criPSI(5)},
	}}))
	return n, web, ids[0], bare
}

// TestUsage: what /metrics/cadvisor is built from is the runtime's CRI
// stats as the runtime gave them, with the containers' IDs and images: no
// figure is filled in (bare reports CPU alone), no rate computed, and a
// pod has figures of its own only from ListPodSandboxStats.
func TestUsage(t *testing.T) {
	at := metav1.NewTime(time.Unix(0, t0.Add(-time.Second).UnixNano()))
	for _, tc := range []struct {
		name  string
		fault map[fake.Method]error
		// sandbox: pod-level figures are expected.
		sandbox bool
		// containers: web's containers are expected.
		containers bool
	}{
		{name: "sandbox stats", sandbox: true, containers: true},
		{name: "sandbox stats unimplemented", containers: true,
			fault: map[fake.Method]error{fake.ListPodSandboxStats: fmt.Errorf("ListPodSandboxStats: %w", cri.ErrUnimplemented)}},
		// containerd 1.7 fails the whole list when one sandbox has no metrics.
		{name: "sandbox stats failed", containers: true,
			fault: map[fake.Method]error{fake.ListPodSandboxStats: errors.New("failed to obtain metrics")}},
		{name: "no stats at all", fault: map[fake.Method]error{
			fake.ListPodSandboxStats: fmt.Errorf("ListPodSandboxStats: %w", cri.ErrUnimplemented),
			fake.ListContainerStats:  fmt.Errorf("ListContainerStats: %w", cri.ErrUnimplemented)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, web, app, bare := usageNode(t)
			for m, err := range tc.fault {
				n.rt.InjectFault(m, fake.Fault{Err: err})
			}
			u, err := n.provider(stats.Options{}).Usage(context.Background())
			require.NoError(t, err)
			require.Len(t, u.Pods, 2, "ready sandboxes only")
			assert.Equal(t, statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-web"}, u.Pods[0].Ref)
			assert.Equal(t, "kube-system/idle", u.Pods[1].Ref.Namespace+"/"+u.Pods[1].Ref.Name)
			assert.Empty(t, u.Pods[1].Containers)
			p := u.Pods[0]
			assert.Equal(t, web, p.SandboxID)

			if tc.sandbox {
				assert.Equal(t, &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: ptr[uint64](3_000_000_000), UsageNanoCores: ptr[uint64](9)}, p.CPU)
				assert.Equal(t, &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: ptr[uint64](90)}, p.Memory, "what the runtime left out stays nil")
				require.NotNil(t, p.Network)
				assert.Equal(t, []statsv1alpha1.InterfaceStats{
					{Name: "eth0", RxBytes: ptr[uint64](10), TxBytes: ptr[uint64](20)},
					{Name: "net1", RxBytes: ptr[uint64](30), RxErrors: ptr[uint64](1), TxBytes: ptr[uint64](40), TxErrors: ptr[uint64](2)},
				}, p.Network.Interfaces, "each interface once")
				assert.Equal(t, "eth0", p.Network.Name)
				assert.Equal(t, ptr[uint64](4), p.Process.ProcessCount)
				assert.Equal(t, wantPSI(5), p.IO.PSI)
			} else {
				assert.Nil(t, p.CPU, "no pod figures without sandbox stats")
				assert.Nil(t, p.Memory)
				assert.Nil(t, p.Network)
				assert.Nil(t, p.Process)
			}
			if !tc.containers {
				assert.Empty(t, p.Containers)
				return
			}
			require.Len(t, p.Containers, 2)
			c := p.Containers[0]
			assert.Equal(t, "app", c.Name)
			assert.Equal(t, app, c.ID)
			assert.Equal(t, "busybox", c.Image, "the runtime's reference without a user-specified image")
			assert.Equal(t, t0, c.CreatedAt.UTC())
			assert.Equal(t, &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: ptr[uint64](2_500_000_000), PSI: wantPSI(3)}, c.CPU, "no rate computed")
			assert.Equal(t, &statsv1alpha1.MemoryStats{Time: at, UsageBytes: ptr[uint64](100), WorkingSetBytes: ptr[uint64](80), RSSBytes: ptr[uint64](60),
				PageFaults: ptr[uint64](7), MajorPageFaults: ptr[uint64](1)}, c.Memory)
			assert.Equal(t, &statsv1alpha1.SwapStats{Time: at, SwapUsageBytes: ptr[uint64](5)}, c.Swap)
			assert.Equal(t, wantPSI(4), c.IO.PSI)
			assert.Equal(t, &stats.WritableLayer{Time: at.Time, Mountpoint: snapshotter, UsedBytes: ptr[uint64](4096), InodesUsed: ptr[uint64](3)}, c.WritableLayer)

			b := p.Containers[1]
			assert.Equal(t, stats.ContainerUsage{ID: bare, Name: "bare", Image: "busybox:1.36", CreatedAt: b.CreatedAt,
				CPU: &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: ptr[uint64](1)}}, b, "only what the runtime reported")
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method fake.Method
		want   string
	}{
		{name: "sandboxes", method: fake.ListPodSandbox, want: "no sandboxes"},
		{name: "containers", method: fake.ListContainers, want: "no containers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _, _, _ := usageNode(t)
			n.rt.InjectFault(tc.method, fake.Fault{Err: errors.New(tc.want)})
			_, err := n.provider(stats.Options{}).Usage(context.Background())
			require.Error(t, err)
			assert.Regexp(t, "^measure usage: .*"+tc.want, err.Error())
		})
	}

	n, _, _, _ := usageNode(t)
	n.rt.InjectFault(fake.ListPodSandboxStats, fake.Fault{Err: errors.New("down")})
	n.rt.InjectFault(fake.ListContainerStats, fake.Fault{Err: errors.New("down too")})
	_, err := n.provider(stats.Options{}).Usage(context.Background())
	assert.ErrorContains(t, err, "down too")
}
