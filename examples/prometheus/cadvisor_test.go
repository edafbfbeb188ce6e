package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/stats/statstest"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

func cri64(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

// cadvisorNode is a fake runtime running default/web (container app, with
// every figure set, and bare, which reports CPU alone) and a stats
// provider over it. It returns the provider, the runtime and the IDs of
// web's sandbox, app and bare.
func cadvisorNode(t *testing.T) (*stats.Provider, *fake.Runtime, string, string, string) {
	t.Helper()
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(statsAt.Time)
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox"}})
	t.Cleanup(rt.Close)
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}
	sid, err := rt.RunPodSandbox(ctx, cfg, "")
	require.NoError(t, err)
	var ids []string
	for _, name := range []string{"app", "bare"} {
		id, err := rt.CreateContainer(ctx, sid, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: "busybox", UserSpecifiedImage: "busybox:1.36"},
		}, cfg)
		require.NoError(t, err)
		require.NoError(t, rt.StartContainer(ctx, id))
		ids = append(ids, id)
	}
	at := statsAt.UnixNano()
	psi := &runtimeapi.PsiStats{Full: &runtimeapi.PsiData{Total: 1_500_000}, Some: &runtimeapi.PsiData{Total: 2_500_000}}
	require.NoError(t, rt.SetContainerStats(ids[0], &runtimeapi.ContainerStats{
		Cpu:    &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: cri64(2_500_000_000), Psi: psi},
		Memory: &runtimeapi.MemoryUsage{Timestamp: at, UsageBytes: cri64(100), WorkingSetBytes: cri64(80), RssBytes: cri64(60), PageFaults: cri64(7), MajorPageFaults: cri64(1)},
		Swap:   &runtimeapi.SwapUsage{Timestamp: at, SwapUsageBytes: cri64(5)},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd"},
			UsedBytes: cri64(4096)},
	}))
	require.NoError(t, rt.SetContainerStats(ids[1], &runtimeapi.ContainerStats{Cpu: &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: cri64(500_000_000)}}))
	require.NoError(t, rt.SetPodSandboxStats(sid, &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{
		Cpu:    &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: cri64(3_000_000_000)},
		Memory: &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: cri64(90)},
		Network: &runtimeapi.NetworkUsage{Timestamp: at,
			DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: cri64(10), RxErrors: cri64(0), TxBytes: cri64(20), TxErrors: cri64(1)}},
		Process: &runtimeapi.ProcessUsage{Timestamp: at, ProcessCount: cri64(4)},
	}}))
	p, err := stats.New(stats.Options{NodeName: "n1", Runtime: rt, Host: &statstest.Host{Clock: clk}, Clock: clk})
	require.NoError(t, err)
	return p, rt, sid, ids[0], ids[1]
}

// The workload series of /metrics/cadvisor are cAdvisor's names, types,
// help texts and labels, built from the runtime's CRI stats (set on the
// fake runtime): what the runtime did not report is left out (bare has
// only its CPU time and start time), samples are stamped with their
// figure's time, and a pod's own series (container="") come only from its
// sandbox stats.
func TestCadvisorMetrics(t *testing.T) {
	const ms = "1767225600000" // statsAt
	for _, tc := range []struct {
		name  string
		fault map[fake.Method]error
		// want is the exposition of the series names (all when empty),
		// with {sandbox} web's sandbox ID, {app} app's and {bare} bare's.
		names []string
		want  string
	}{
		{name: "sandbox stats", want: `
# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="",cpu="total",id="{sandbox}",image="",name="",namespace="default",pod="web"} 3 ` + ms + `
container_cpu_usage_seconds_total{container="app",cpu="total",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 2.5 ` + ms + `
container_cpu_usage_seconds_total{container="bare",cpu="total",id="{bare}",image="busybox:1.36",name="{bare}",namespace="default",pod="web"} 0.5 ` + ms + `
# HELP container_fs_usage_bytes Number of bytes that are consumed by the container on this filesystem.
# TYPE container_fs_usage_bytes gauge
container_fs_usage_bytes{container="app",device="/var/lib/containerd",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 4096 ` + ms + `
# HELP container_memory_failures_total Cumulative count of memory allocation failures.
# TYPE container_memory_failures_total counter
container_memory_failures_total{container="app",failure_type="pgfault",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web",scope="container"} 7 ` + ms + `
container_memory_failures_total{container="app",failure_type="pgfault",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web",scope="hierarchy"} 7 ` + ms + `
container_memory_failures_total{container="app",failure_type="pgmajfault",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web",scope="container"} 1 ` + ms + `
container_memory_failures_total{container="app",failure_type="pgmajfault",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web",scope="hierarchy"} 1 ` + ms + `
# HELP container_memory_rss Size of RSS in bytes.
# TYPE container_memory_rss gauge
container_memory_rss{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 60 ` + ms + `
# HELP container_memory_swap Container swap usage in bytes.
# TYPE container_memory_swap gauge
container_memory_swap{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 5 ` + ms + `
# HELP container_memory_usage_bytes Current memory usage in bytes, including all memory regardless of when it was accessed
# TYPE container_memory_usage_bytes gauge
container_memory_usage_bytes{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 100 ` + ms + `
# HELP container_memory_working_set_bytes Current working set in bytes.
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="",id="{sandbox}",image="",name="",namespace="default",pod="web"} 90 ` + ms + `
container_memory_working_set_bytes{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 80 ` + ms + `
# HELP container_network_receive_bytes_total Cumulative count of bytes received
# TYPE container_network_receive_bytes_total counter
container_network_receive_bytes_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 10 ` + ms + `
# HELP container_network_receive_errors_total Cumulative count of errors encountered while receiving
# TYPE container_network_receive_errors_total counter
container_network_receive_errors_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 0 ` + ms + `
# HELP container_network_transmit_bytes_total Cumulative count of bytes transmitted
# TYPE container_network_transmit_bytes_total counter
container_network_transmit_bytes_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 20 ` + ms + `
# HELP container_network_transmit_errors_total Cumulative count of errors encountered while transmitting
# TYPE container_network_transmit_errors_total counter
container_network_transmit_errors_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 1 ` + ms + `
# HELP container_pressure_cpu_stalled_seconds_total Total time duration no tasks in the container could make progress due to CPU congestion.
# TYPE container_pressure_cpu_stalled_seconds_total counter
container_pressure_cpu_stalled_seconds_total{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 1.5 ` + ms + `
# HELP container_pressure_cpu_waiting_seconds_total Total time duration tasks in the container have waited due to CPU congestion.
# TYPE container_pressure_cpu_waiting_seconds_total counter
container_pressure_cpu_waiting_seconds_total{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 2.5 ` + ms + `
# HELP container_processes Number of processes running inside the container.
# TYPE container_processes gauge
container_processes{container="",id="{sandbox}",image="",name="",namespace="default",pod="web"} 4
# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE container_scrape_error gauge
container_scrape_error 0
# HELP container_start_time_seconds Start time of the container since unix epoch in seconds.
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 1.7672256e+09
container_start_time_seconds{container="bare",id="{bare}",image="busybox:1.36",name="{bare}",namespace="default",pod="web"} 1.7672256e+09
`},
		{name: "container stats alone", fault: map[fake.Method]error{fake.ListPodSandboxStats: fmt.Errorf("ListPodSandboxStats: %w", cri.ErrUnimplemented)},
			names: []string{"container_cpu_usage_seconds_total", "container_network_receive_bytes_total", "container_processes", "container_scrape_error"},
			want: `
# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",cpu="total",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 2.5 ` + ms + `
container_cpu_usage_seconds_total{container="bare",cpu="total",id="{bare}",image="busybox:1.36",name="{bare}",namespace="default",pod="web"} 0.5 ` + ms + `
# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE container_scrape_error gauge
container_scrape_error 0
`},
		{name: "the runtime fails", fault: map[fake.Method]error{fake.ListContainers: errors.New("down")}, want: `
# HELP container_scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE container_scrape_error gauge
container_scrape_error 1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, rt, sid, app, bare := cadvisorNode(t)
			for m, err := range tc.fault {
				rt.InjectFault(m, fake.Fault{Err: err})
			}
			c, err := prometheus.NewCadvisorCollector(p, prometheus.CadvisorOptions{})
			require.NoError(t, err)
			want := strings.NewReplacer("{sandbox}", sid, "{app}", app, "{bare}", bare).Replace(tc.want)
			require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), tc.names...))
		})
	}
}

// A CPU time of zero is left out, as cAdvisor leaves it out; an empty
// usage is no error.
func TestCadvisorZeroCPU(t *testing.T) {
	zero := uint64(0)
	usage := &stats.Usage{Pods: []stats.PodUsage{{SandboxID: "s", Containers: []stats.ContainerUsage{{ID: "c", Name: "app",
		CreatedAt: statsAt.Time, CPU: cpu(zero)}}}}}
	c, err := prometheus.NewCadvisorCollector(prometheus.UsageFunc(func(context.Context) (*stats.Usage, error) { return usage, nil }), prometheus.CadvisorOptions{})
	require.NoError(t, err)
	assert.Equal(t, 0, testutil.CollectAndCount(c, "container_cpu_usage_seconds_total"))
	assert.Equal(t, 1, testutil.CollectAndCount(c, "container_start_time_seconds"))
}

// The machine series are cAdvisor's, labelled with the machine's
// identities; machine_swap_bytes is 0 without swap, as cAdvisor's.
func TestMachineMetrics(t *testing.T) {
	swap := int64(2 << 30)
	info := v1.NodeSystemInfo{BootID: "b1", MachineID: "m1", SystemUUID: "u1"}
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}
	for _, tc := range []struct {
		name string
		swap *v1.NodeSwapStatus
		want string
	}{
		{name: "swap", swap: &v1.NodeSwapStatus{Capacity: &swap}, want: "2.147483648e+09"},
		{name: "no swap", want: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := info
			info.Swap = tc.swap
			c, err := prometheus.NewMachineCollector(nodetest.Machine{Cap: capacity, Info: info}, prometheus.CadvisorOptions{})
			require.NoError(t, err)
			require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP machine_cpu_cores Number of logical CPU cores.
# TYPE machine_cpu_cores gauge
machine_cpu_cores{boot_id="b1",machine_id="m1",system_uuid="u1"} 4
# HELP machine_memory_bytes Amount of memory installed on the machine.
# TYPE machine_memory_bytes gauge
machine_memory_bytes{boot_id="b1",machine_id="m1",system_uuid="u1"} 8.589934592e+09
# HELP machine_scrape_error 1 if there was an error while getting machine metrics, 0 otherwise.
# TYPE machine_scrape_error gauge
machine_scrape_error 0
# HELP machine_swap_bytes Amount of swap memory available on the machine.
# TYPE machine_swap_bytes gauge
machine_swap_bytes{boot_id="b1",machine_id="m1",system_uuid="u1"} `+tc.want+`
`)))
		})
	}
}

// failingMachine is a node.Machine whose capacity cannot be read.
type failingMachine struct{ nodetest.Machine }

func (failingMachine) Capacity(context.Context) (v1.ResourceList, error) {
	return nil, errors.New("no meminfo")
}

func TestMachineMetricsError(t *testing.T) {
	c, err := prometheus.NewMachineCollector(failingMachine{}, prometheus.CadvisorOptions{})
	require.NoError(t, err)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(`
# HELP machine_scrape_error 1 if there was an error while getting machine metrics, 0 otherwise.
# TYPE machine_scrape_error gauge
machine_scrape_error 1
`)))
}

// The handler serves both halves on a registry of its own, which passes
// the registry's consistency checks; nil dependencies are refused.
func TestCadvisorHandler(t *testing.T) {
	p, _, _, _, _ := cadvisorNode(t)
	machine := nodetest.Machine{Cap: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}
	h, err := prometheus.NewCadvisorHandler(p, machine, prometheus.CadvisorOptions{Timeout: time.Second})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics/cadvisor", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body, _ := io.ReadAll(rec.Body)
	for _, s := range []string{"\nmachine_cpu_cores{", "\ncontainer_cpu_usage_seconds_total{", "\ncontainer_scrape_error 0", "\nmachine_scrape_error 0"} {
		assert.Contains(t, string(body), s)
	}

	_, err = prometheus.NewCadvisorHandler(nil, machine, prometheus.CadvisorOptions{})
	assert.ErrorIs(t, err, prometheus.ErrInvalidArgument)
	_, err = prometheus.NewCadvisorHandler(p, nil, prometheus.CadvisorOptions{})
	assert.ErrorIs(t, err, prometheus.ErrInvalidArgument)
}

// With CadvisorOptions.Cgroups, the series cAdvisor reads from the cgroups
// and the pod's network namespace join the CRI's, under cAdvisor's names,
// help texts, types and labels: the CFS counters only where a CPU quota is
// set (app), page cache and block I/O for the pod and its containers, the
// packets and drops for the pod; a device sysfs did not name has only
// container_blkio_device_usage_total; a pod or container the cgroups did
// not tell of has none of them.
func TestCadvisorCgroupMetrics(t *testing.T) {
	const ms = "1767225600000" // statsAt
	p, _, sid, app, _ := cadvisorNode(t)
	cache, appCache := uint64(8192), uint64(4096)
	var asked []string
	cgroups := prometheus.CgroupStatsFunc(func(_ context.Context, pods []stats.PodUsage) map[types.UID]*stats.PodCgroupStats {
		for _, p := range pods {
			asked = append(asked, p.Ref.UID)
		}
		return map[types.UID]*stats.PodCgroupStats{"uid-web": {
			Pod: stats.CgroupStats{Time: statsAt.Time, MemoryCacheBytes: &cache, IO: []stats.DeviceIO{
				{Major: 7, Minor: 3, Bytes: map[string]uint64{"Read": 4096}},
				{Device: "/dev/vda", Major: 254, Bytes: map[string]uint64{"Read": 1228800, "Write": 49152}, Ops: map[string]uint64{"Read": 30}},
			}},
			Containers: map[string]stats.CgroupStats{app: {Time: statsAt.Time, MemoryCacheBytes: &appCache,
				CFS: &stats.CFSStats{Periods: 40, ThrottledPeriods: 5, ThrottledTime: 2500 * time.Millisecond}}},
			Network: &stats.PodNetworkStats{Time: statsAt.Time, Interfaces: []stats.InterfaceStats{
				{Name: "eth0", RxPackets: 203, RxDropped: 3, TxPackets: 117, TxDropped: 1}}},
		}}
	})
	c, err := prometheus.NewCadvisorCollector(p, prometheus.CadvisorOptions{Cgroups: cgroups})
	require.NoError(t, err)
	want := strings.NewReplacer("{sandbox}", sid, "{app}", app).Replace(`
# HELP container_blkio_device_usage_total Blkio Device bytes usage
# TYPE container_blkio_device_usage_total counter
container_blkio_device_usage_total{container="",device="",id="{sandbox}",image="",major="7",minor="3",name="",namespace="default",operation="Read",pod="web"} 4096 ` + ms + `
container_blkio_device_usage_total{container="",device="/dev/vda",id="{sandbox}",image="",major="254",minor="0",name="",namespace="default",operation="Read",pod="web"} 1.2288e+06 ` + ms + `
container_blkio_device_usage_total{container="",device="/dev/vda",id="{sandbox}",image="",major="254",minor="0",name="",namespace="default",operation="Write",pod="web"} 49152 ` + ms + `
# HELP container_cpu_cfs_periods_total Number of elapsed enforcement period intervals.
# TYPE container_cpu_cfs_periods_total counter
container_cpu_cfs_periods_total{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 40 ` + ms + `
# HELP container_cpu_cfs_throttled_periods_total Number of throttled period intervals.
# TYPE container_cpu_cfs_throttled_periods_total counter
container_cpu_cfs_throttled_periods_total{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 5 ` + ms + `
# HELP container_cpu_cfs_throttled_seconds_total Total time duration the container has been throttled.
# TYPE container_cpu_cfs_throttled_seconds_total counter
container_cpu_cfs_throttled_seconds_total{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 2.5 ` + ms + `
# HELP container_fs_reads_bytes_total Cumulative count of bytes read
# TYPE container_fs_reads_bytes_total counter
container_fs_reads_bytes_total{container="",device="/dev/vda",id="{sandbox}",image="",name="",namespace="default",pod="web"} 1.2288e+06 ` + ms + `
# HELP container_fs_reads_total Cumulative count of reads completed
# TYPE container_fs_reads_total counter
container_fs_reads_total{container="",device="/dev/vda",id="{sandbox}",image="",name="",namespace="default",pod="web"} 30 ` + ms + `
# HELP container_fs_writes_bytes_total Cumulative count of bytes written
# TYPE container_fs_writes_bytes_total counter
container_fs_writes_bytes_total{container="",device="/dev/vda",id="{sandbox}",image="",name="",namespace="default",pod="web"} 49152 ` + ms + `
# HELP container_fs_writes_total Cumulative count of writes completed
# TYPE container_fs_writes_total counter
container_fs_writes_total{container="",device="/dev/vda",id="{sandbox}",image="",name="",namespace="default",pod="web"} 0 ` + ms + `
# HELP container_memory_cache Number of bytes of page cache memory.
# TYPE container_memory_cache gauge
container_memory_cache{container="",id="{sandbox}",image="",name="",namespace="default",pod="web"} 8192 ` + ms + `
container_memory_cache{container="app",id="{app}",image="busybox:1.36",name="{app}",namespace="default",pod="web"} 4096 ` + ms + `
# HELP container_network_receive_packets_dropped_total Cumulative count of packets dropped while receiving
# TYPE container_network_receive_packets_dropped_total counter
container_network_receive_packets_dropped_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 3 ` + ms + `
# HELP container_network_receive_packets_total Cumulative count of packets received
# TYPE container_network_receive_packets_total counter
container_network_receive_packets_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 203 ` + ms + `
# HELP container_network_transmit_packets_dropped_total Cumulative count of packets dropped while transmitting
# TYPE container_network_transmit_packets_dropped_total counter
container_network_transmit_packets_dropped_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 1 ` + ms + `
# HELP container_network_transmit_packets_total Cumulative count of packets transmitted
# TYPE container_network_transmit_packets_total counter
container_network_transmit_packets_total{container="",id="{sandbox}",image="",interface="eth0",name="",namespace="default",pod="web"} 117 ` + ms + `
`)
	names := []string{"container_blkio_device_usage_total", "container_cpu_cfs_periods_total", "container_cpu_cfs_throttled_periods_total",
		"container_cpu_cfs_throttled_seconds_total", "container_fs_reads_bytes_total", "container_fs_reads_total", "container_fs_writes_bytes_total",
		"container_fs_writes_total", "container_memory_cache", "container_network_receive_packets_dropped_total",
		"container_network_receive_packets_total", "container_network_transmit_packets_dropped_total", "container_network_transmit_packets_total"}
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want), names...))
	assert.Equal(t, []string{"uid-web"}, asked, "asked for the pods of the usage")

	// Without Cgroups, none of them.
	c, err = prometheus.NewCadvisorCollector(p, prometheus.CadvisorOptions{})
	require.NoError(t, err)
	assert.Equal(t, 0, testutil.CollectAndCount(c, names...))
}
