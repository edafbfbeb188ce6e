package memorymanager_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/memorymanager"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

func underTopologyManager(t *testing.T, scope string) (*topologymanager.Manager, *memorymanager.Manager) {
	t.Helper()
	machine := memorymanager.FakeMachine(2, 4*gi, memorymanager.HugePages{PageSize: 2 * mi, Pages: 512})
	tm, err := topologymanager.New(topologymanager.Options{Policy: topologymanager.PolicySingleNumaNode, Scope: scope, NUMANodes: machine.NUMANodes(), Logger: quiet})
	require.NoError(t, err)
	m, err := memorymanager.New(memorymanager.Options{Policy: memorymanager.PolicyStatic, Machine: machine, Affinity: tm, Logger: quiet,
		ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "memory", "512Mi"), reservation(1, "memory", "512Mi")},
		KubeReserved:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}})
	require.NoError(t, err)
	tm.AddHintProvider(m)
	return tm, m
}

// Under a topology manager with the single-numa-node policy on two NUMA
// nodes (2.5Gi allocatable each), the memory manager's hints decide where a
// container's memory goes, and what fits on no single node is refused.
func TestHintsUnderTopologyManager(t *testing.T) {
	tm, m := underTopologyManager(t, topologymanager.ScopeContainer)

	// 3Gi fit only on both nodes, which single-numa-node refuses.
	p0 := pod("p0", []string{"app c mem=3Gi"})
	assert.Equal(t, "[{0,1} preferred]", fmtHints(m.ContainerHints(p0, &p0.Spec.Containers[0])["memory"]))
	ok, reason, msg := tm.Admit(p0, nil)
	assert.False(t, ok)
	assert.Equal(t, "TopologyAffinityError", reason)
	assert.Equal(t, "Resources cannot be allocated with Topology locality", msg)
	assert.Empty(t, m.Assignments()["p0"])

	p1 := pod("p1", []string{"app c mem=2Gi"})
	assert.Equal(t, "[{0} preferred {1} preferred {0,1} not preferred]", fmtHints(m.ContainerHints(p1, &p1.Spec.Containers[0])["memory"]))
	ok, reason, msg = tm.Admit(p1, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	assert.Equal(t, "0", m.ContainerMemoryNodes(p1, &p1.Spec.Containers[0]))

	// Node 0 has 512Mi left: node 1.
	p2 := pod("p2", []string{"app c mem=2Gi hugepages-2Mi=1Gi"})
	assert.Equal(t, "[{1} preferred]", fmtHints(m.ContainerHints(p2, &p2.Spec.Containers[0])["hugepages-2Mi"]))
	ok, _, _ = tm.Admit(p2, nil)
	require.True(t, ok)
	assert.Equal(t, "1", m.ContainerMemoryNodes(p2, &p2.Spec.Containers[0]))
	// Allocated, its hints are its blocks'.
	assert.Equal(t, "[{1} preferred]", fmtHints(m.ContainerHints(p2, &p2.Spec.Containers[0])["memory"]))
	m.RemovePod("p2")

	// 2.5Gi fit on node 1 alone, not on node 0 (2Gi held): one hint.
	p4 := pod("p4", []string{"app c mem=2560Mi"})
	assert.Equal(t, "[{1} preferred]", fmtHints(m.ContainerHints(p4, &p4.Spec.Containers[0])["memory"]))

	// 1Gi fits on neither node now that node 1 holds memory too, and not on
	// both (they serve single-NUMA allocations): no hints, so the topology
	// manager admits with no preference and Allocate refuses, as upstream.
	p5 := pod("p5", []string{"app c mem=2Gi"})
	ok, _, _ = tm.Admit(p5, nil)
	require.True(t, ok)
	p6 := pod("p6", []string{"app c mem=1Gi"})
	assert.Equal(t, map[string][]topologymanager.Hint{}, m.ContainerHints(p6, &p6.Spec.Containers[0]))
	ok, reason, msg = tm.Admit(p6, nil)
	assert.False(t, ok)
	assert.Equal(t, "UnexpectedAdmissionError", reason)
	assert.Equal(t, "Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected", msg)

	// A Burstable pod gives no hints and is admitted unpinned.
	p7 := pod("p7", []string{"app c mem=1Gi burstable"})
	assert.Nil(t, m.ContainerHints(p7, &p7.Spec.Containers[0]))
	ok, _, _ = tm.Admit(p7, nil)
	assert.True(t, ok)
	assert.Empty(t, m.ContainerMemoryNodes(p7, &p7.Spec.Containers[0]))
}

// With the pod scope, the pod's containers are aligned together on one
// node: what they need at once must fit there.
func TestPodScope(t *testing.T) {
	tm, m := underTopologyManager(t, topologymanager.ScopePod)
	// 3Gi at once (1.5Gi apart) fit on no single node.
	p0 := pod("p0", []string{"app a mem=1536Mi", "app b mem=1536Mi"})
	ok, reason, _ := tm.Admit(p0, nil)
	assert.False(t, ok)
	assert.Equal(t, "TopologyAffinityError", reason)

	p1 := pod("p1", []string{"init i mem=2Gi", "app a mem=1Gi", "app b mem=1Gi"})
	assert.Equal(t, "[{0} preferred {1} preferred {0,1} not preferred]", fmtHints(m.PodHints(p1)["memory"]))
	ok, reason, msg := tm.Admit(p1, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	for _, c := range []string{"i", "a", "b"} {
		assert.Equal(t, "0", memoryNodes(m, p1, c), c)
	}
}

func memoryNodes(m *memorymanager.Manager, p *v1.Pod, name string) string {
	for _, c := range podspec.Containers(p) {
		if c.Name == name {
			return m.ContainerMemoryNodes(p, c)
		}
	}
	return "?"
}

func fmtHints(h []topologymanager.Hint) string {
	out := "["
	for i, x := range h {
		if i > 0 {
			out += " "
		}
		out += x.String()
	}
	return out + "]"
}

type pinningLog []bool

func (l *pinningLog) MemoryPinning(failed bool) { *l = append(*l, failed) }

// Each Guaranteed container the Static policy pins is counted, and its
// failure; a Burstable pod's containers are not.
func TestMetrics(t *testing.T) {
	var got pinningLog
	machine := memorymanager.FakeMachine(1, 4*gi)
	m, err := memorymanager.New(memorymanager.Options{Policy: memorymanager.PolicyStatic, Machine: machine, Metrics: &got, Logger: quiet,
		ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "memory", "1Gi")},
		KubeReserved:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}})
	require.NoError(t, err)
	ok, _, _ := m.Admit(pod("a", []string{"app c mem=2Gi"}), nil)
	require.True(t, ok)
	ok, _, _ = m.Admit(pod("b", []string{"app c mem=2Gi"}), nil)
	require.False(t, ok)
	assert.Equal(t, pinningLog{false, true}, got)
}
