//go:build linux

package stats_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/stats"
)

func psi(some, full statsv1alpha1.PSIData) *statsv1alpha1.PSIStats {
	return &statsv1alpha1.PSIStats{Some: some, Full: full}
}

// KubeletPSI on a Linux host: the node's pressure from /proc/pressure
// (CPU and memory in both summaries, I/O in the full one), a system
// container's from its cgroup v2 files, averages in percent and totals in
// the kernel's microseconds as upstream reports them. A pressure file that
// is missing (cgroup v1 and a kernel without PSI: testdata/v1) or does not
// parse (the pods cgroup's memory.pressure in testdata/v2) gives no PSI and no
// error.
func TestLinuxHostPSI(t *testing.T) {
	cpu := psi(statsv1alpha1.PSIData{Avg10: 12.5, Avg60: 6.25, Avg300: 1.75, Total: 98765432}, statsv1alpha1.PSIData{})
	mem := psi(statsv1alpha1.PSIData{Avg10: 3.1, Avg60: 2.2, Avg300: 1.3, Total: 4567890}, statsv1alpha1.PSIData{Avg10: 1.5, Avg60: 1.1, Avg300: 0.6, Total: 2345678})
	io := psi(statsv1alpha1.PSIData{Avg10: 0.4, Avg60: 0.3, Avg300: 0.2, Total: 123456}, statsv1alpha1.PSIData{Avg10: 0.2, Avg60: 0.1, Avg300: 0.05, Total: 65432})
	podsCPU := psi(statsv1alpha1.PSIData{Avg10: 5, Avg60: 2.5, Avg300: 1, Total: 5000000}, statsv1alpha1.PSIData{Avg10: 4, Avg60: 2, Avg300: 0.8, Total: 4000000})
	podsIO := psi(statsv1alpha1.PSIData{Total: 777}, statsv1alpha1.PSIData{Total: 555})
	cases := []struct {
		dir, pods                string
		cpu, mem, io             *statsv1alpha1.PSIStats
		podsCPU, podsMem, podsIO *statsv1alpha1.PSIStats
	}{
		{dir: "v2", pods: "/kubepods.slice", cpu: cpu, mem: mem, io: io, podsCPU: podsCPU, podsIO: podsIO},
		{dir: "v1", pods: "/kubepods"},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			root := filepath.Join("testdata", tc.dir)
			h := stats.NewLinuxHost(stats.LinuxHostOptions{ProcRoot: filepath.Join(root, "proc"), CgroupRoot: filepath.Join(root, "cgroup"), Clock: clk})
			n := newNode(t)
			p, err := stats.New(stats.Options{NodeName: "node-1", Runtime: n.rt, Host: h, Clock: clk, RootDir: n.rootDir, PodLogsDir: n.logsDir,
				PodsCgroup: tc.pods, CPUSamplePeriod: -1})
			require.NoError(t, err)

			full, err := p.Summary(context.Background(), false)
			require.NoError(t, err)
			node := full.Node
			assert.Equal(t, tc.cpu, node.CPU.PSI, "node.cpu.psi")
			assert.Equal(t, tc.mem, node.Memory.PSI, "node.memory.psi")
			assertIOPSI(t, tc.io, node.IO, "node.io")
			if node.IO != nil {
				assert.True(t, node.IO.Time.Time.Equal(t0))
			}
			require.Len(t, node.SystemContainers, 1)
			pods := node.SystemContainers[0]
			assert.Equal(t, statsv1alpha1.SystemContainerPods, pods.Name)
			assert.Equal(t, tc.podsCPU, pods.CPU.PSI, "pods cgroup cpu.pressure")
			assert.Equal(t, tc.podsMem, pods.Memory.PSI, "pods cgroup memory.pressure")
			assertIOPSI(t, tc.podsIO, pods.IO, "pods cgroup io.pressure")

			only, err := p.Summary(context.Background(), true)
			require.NoError(t, err)
			assert.Equal(t, tc.cpu, only.Node.CPU.PSI, "CPU and memory keep their PSI")
			assert.Equal(t, tc.mem, only.Node.Memory.PSI)
			assert.Nil(t, only.Node.IO, "no I/O figures in the CPU-and-memory summary")
			require.Len(t, only.Node.SystemContainers, 1)
			assert.Equal(t, tc.podsCPU, only.Node.SystemContainers[0].CPU.PSI)
			assert.Nil(t, only.Node.SystemContainers[0].IO)
		})
	}
}
