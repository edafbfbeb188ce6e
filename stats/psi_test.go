package stats_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/stats"
)

// criPSI is CRI pressure stall information with distinct figures per
// base, so that a figure copied to the wrong place shows.
func criPSI(base float64) *runtimeapi.PsiStats {
	return &runtimeapi.PsiStats{
		Some: &runtimeapi.PsiData{Total: uint64(base * 1000), Avg10: base, Avg60: base / 2, Avg300: base / 4},
		Full: &runtimeapi.PsiData{Total: uint64(base * 100), Avg10: base / 10, Avg60: base / 20, Avg300: base / 40},
	}
}

func wantPSI(base float64) *statsv1alpha1.PSIStats {
	return &statsv1alpha1.PSIStats{
		Some: statsv1alpha1.PSIData{Total: uint64(base * 1000), Avg10: base, Avg60: base / 2, Avg300: base / 4},
		Full: statsv1alpha1.PSIData{Total: uint64(base * 100), Avg10: base / 10, Avg60: base / 20, Avg300: base / 40},
	}
}

// assertIOPSI checks an I/O figure: nil when want is, else with want's PSI.
func assertIOPSI(t *testing.T, want *statsv1alpha1.PSIStats, got *statsv1alpha1.IOStats, what string) {
	t.Helper()
	if want == nil {
		assert.Nil(t, got, what)
	} else if assert.NotNil(t, got, what) {
		assert.Equal(t, want, got.PSI, what)
	}
}

// KubeletPSI for pods and containers: the pressure stall information the
// runtime gives in its CRI stats is copied, field for field, to the pod's
// and each container's CPU, memory and (in a full summary) I/O. A runtime
// that gives none leaves PSI out. When pods are measured from their
// containers (ListPodSandboxStats unavailable) the pod has none: as
// upstream, it is not derived from the containers'.
func TestSummaryPodAndContainerPSI(t *testing.T) {
	for _, tc := range []struct {
		name     string
		only     bool
		fallback bool
	}{
		{name: "full"},
		{name: "cpu and memory", only: true},
		{name: "from container stats", fallback: true},
		{name: "from container stats, cpu and memory", only: true, fallback: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			sid, ids := n.runPod("default", "web", "app", "quiet")
			at := n.clk.Now().UnixNano()
			require.NoError(t, n.rt.SetContainerStats(ids[0], &runtimeapi.ContainerStats{
				Cpu:    &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 1}, Psi: criPSI(1)},
				Memory: &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 1}, Psi: criPSI(2)},
				Io:     &runtimeapi.IoUsage{Timestamp: at, Psi: criPSI(3)},
			}))
			require.NoError(t, n.rt.SetPodSandboxStats(sid, &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{
				Cpu:    &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 2}, Psi: criPSI(10)},
				Memory: &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 2}, Psi: criPSI(20)},
				Io:     &runtimeapi.IoUsage{Timestamp: at, Psi: criPSI(30)},
			}}))
			if tc.fallback {
				n.rt.InjectFault(fake.ListPodSandboxStats, fake.Fault{Err: errors.New("unavailable")})
			}
			s, err := n.provider(stats.Options{}).Summary(context.Background(), tc.only)
			require.NoError(t, err)
			require.Len(t, s.Pods, 1)
			pod := s.Pods[0]
			require.Len(t, pod.Containers, 2)
			app, quiet := pod.Containers[0], pod.Containers[1]
			require.Equal(t, "app", app.Name)

			assert.Equal(t, wantPSI(1), app.CPU.PSI, "container cpu")
			assert.Equal(t, wantPSI(2), app.Memory.PSI, "container memory")
			podIO, appIO := wantPSI(30), wantPSI(3)
			if tc.only {
				// No I/O in the CPU-and-memory summary.
				podIO, appIO = nil, nil
			}
			assertIOPSI(t, appIO, app.IO, "container io")
			assert.Nil(t, quiet.CPU.PSI, "a runtime that gives no PSI")
			assert.Nil(t, quiet.Memory.PSI)
			assert.Nil(t, quiet.IO)

			if tc.fallback {
				assert.Nil(t, pod.CPU.PSI, "not derived from the containers'")
				assert.Nil(t, pod.Memory.PSI)
				assert.Nil(t, pod.IO)
				return
			}
			assert.Equal(t, wantPSI(10), pod.CPU.PSI, "pod cpu")
			assert.Equal(t, wantPSI(20), pod.Memory.PSI, "pod memory")
			assertIOPSI(t, podIO, pod.IO, "pod io")
		})
	}
}
