package cpumanager_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// Under a topology manager on two NUMA nodes (two sockets of three cores,
// two threads each; CPU 0 reserved), the CPU manager's hints decide where a
// container's CPUs come from, and single-numa-node refuses what fits on no
// single node.
func TestHintsUnderTopologyManager(t *testing.T) {
	tp := topo(t, 2, 3, 2, 1)
	tm, err := topologymanager.New(topologymanager.Options{Policy: topologymanager.PolicySingleNumaNode, NUMANodes: tp.NUMANodes(), Logger: quiet})
	require.NoError(t, err)
	m, err := cpumanager.New(cpumanager.Options{Policy: cpumanager.PolicyStatic, Topology: tp, ReservedMilliCPU: 1000, Affinity: tm, Logger: quiet})
	require.NoError(t, err)
	tm.AddHintProvider(m)

	// 4 CPUs fit on either node: node 0 has 5 free (0 is reserved), node 1 six.
	p1 := pod("p1", []string{"app c cpu=4"})
	hints := m.ContainerHints(p1, &p1.Spec.Containers[0])[string(v1.ResourceCPU)]
	assert.Equal(t, "[{0} preferred {1} preferred {0,1} not preferred]", fmtHints(hints))
	ok, reason, msg := tm.Admit(p1, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	assert.Equal(t, []int{0}, tp.NUMANodesOf(m.ContainerCPUs(p1.UID, "c")), "the CPUs of one node")

	// 4 more: only node 1 still has them.
	p2 := pod("p2", []string{"app c cpu=4"})
	ok, _, _ = tm.Admit(p2, nil)
	require.True(t, ok)
	assert.Equal(t, []int{1}, tp.NUMANodesOf(m.ContainerCPUs(p2.UID, "c")))

	// 3 CPUs are free, one on node 0 and two on node 1: no single node.
	p3 := pod("p3", []string{"app c cpu=3"})
	ok, reason, msg = tm.Admit(p3, nil)
	assert.False(t, ok)
	assert.Equal(t, "TopologyAffinityError", reason)
	assert.Equal(t, "Resources cannot be allocated with Topology locality", msg)
	assert.Empty(t, m.Assignments()["p3"], "nothing held by a refused pod")

	// A Burstable pod gives no hints: admitted on the shared pool.
	p4 := pod("p4", []string{"app c cpu=3 burstable"})
	assert.Nil(t, m.ContainerHints(p4, &p4.Spec.Containers[0]))
	ok, _, _ = tm.Admit(p4, nil)
	assert.True(t, ok)

	// The pod scope's hints count what the pod needs at once: the init
	// container's 2, or the sidecar and the app container together, 2.
	p5 := pod("p5", []string{"init i cpu=2", "init s cpu=1 sidecar", "app a cpu=1"})
	assert.Equal(t, "[{1} preferred {0,1} not preferred]", fmtHints(m.PodHints(p5)[string(v1.ResourceCPU)]))
	// 3 at once (sidecar and two app containers) fit on no single node.
	p6 := pod("p6", []string{"init s cpu=1 sidecar", "app a cpu=1", "app b cpu=1"})
	assert.Equal(t, "[{0,1} not preferred]", fmtHints(m.PodHints(p6)[string(v1.ResourceCPU)]))
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
