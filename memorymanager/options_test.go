package memorymanager_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubeletkit/kubeletkit/memorymanager"
)

func reservation(node int32, kv ...string) kubeletconfig.MemoryReservation {
	r := kubeletconfig.MemoryReservation{NumaNode: node, Limits: v1.ResourceList{}}
	for i := 0; i < len(kv); i += 2 {
		r.Limits[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return r
}

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// New checks the options and, for the static policy, the reserved memory
// configuration with upstream's messages.
func TestNewRefuses(t *testing.T) {
	machine := memorymanager.FakeMachine(2, 4*gi, memorymanager.HugePages{PageSize: 2 * mi, Pages: 512})
	for _, tc := range []struct {
		name string
		opts memorymanager.Options
		err  string
	}{
		{"unknown policy", memorymanager.Options{Policy: "BestEffort"}, `memorymanager: invalid options: unknown policy: "BestEffort"`},
		{"static without a machine", memorymanager.Options{Policy: "Static"}, "memorymanager: invalid options: the static policy needs the Machine"},
		{"static without reserved memory", memorymanager.Options{Policy: "Static", Machine: machine},
			"memorymanager: invalid options: [memorymanager] you should specify the system reserved memory"},
		{"a NUMA node that does not exist", memorymanager.Options{Policy: "Static", Machine: machine,
			ReservedMemory: []kubeletconfig.MemoryReservation{reservation(2, "memory", "1Gi")}, KubeReserved: list("memory", "1Gi")},
			"memorymanager: invalid options: the reserved memory configuration references a NUMA node 2 that does not exist on this machine"},
		{"less reserved than kube+system+eviction", memorymanager.Options{Policy: "Static", Machine: machine,
			ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "memory", "500Mi"), reservation(1, "memory", "400Mi")},
			KubeReserved:   list("memory", "500Mi"), SystemReserved: list("memory", "400Mi"), EvictionHardMemory: resource.MustParse("100Mi")},
			`memorymanager: invalid options: the total amount "900Mi" of type "memory" is not equal to the value "1000Mi" determined by Node Allocatable feature`},
		{"more reserved than node allocatable", memorymanager.Options{Policy: "Static", Machine: machine,
			ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "memory", "1Gi"), reservation(1, "memory", "1Gi")}, KubeReserved: list("memory", "1Gi")},
			`memorymanager: invalid options: the total amount "2Gi" of type "memory" is not equal to the value "1Gi" determined by Node Allocatable feature`},
		{"huge pages reserved but not in kubeReserved", memorymanager.Options{Policy: "Static", Machine: machine,
			ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "memory", "1Gi", "hugepages-2Mi", "4Mi")}, KubeReserved: list("memory", "1Gi")},
			`memorymanager: invalid options: the total amount "4Mi" of type "hugepages-2Mi" is not equal to the value "0" determined by Node Allocatable feature`},
		{"huge pages in systemReserved but not reserved", memorymanager.Options{Policy: "Static", Machine: machine,
			ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "memory", "1Gi")}, KubeReserved: list("memory", "1Gi"), SystemReserved: list("hugepages-2Mi", "2Mi")},
			`memorymanager: invalid options: the total amount "0" of type "hugepages-2Mi" is not equal to the value "2Mi" determined by Node Allocatable feature`},
		{"only huge pages reserved", memorymanager.Options{Policy: "Static", Machine: machine,
			ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "hugepages-2Mi", "2Mi")}, KubeReserved: list("hugepages-2Mi", "2Mi")},
			"memorymanager: invalid options: [memorymanager] you should specify the system reserved memory"},
		{"more than the node has", memorymanager.Options{Policy: "Static", Machine: machine,
			ReservedMemory: []kubeletconfig.MemoryReservation{reservation(0, "memory", "3584Mi")}, KubeReserved: list("memory", "3584Mi")},
			`memorymanager: invalid options: the reserved memory 3758096384 of type "memory" on NUMA node 0 exceeds its 3221225472 bytes outside huge pages`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Logger = quiet
			_, err := memorymanager.New(tc.opts)
			require.EqualError(t, err, tc.err)
			assert.ErrorIs(t, err, memorymanager.ErrInvalidOptions)
		})
	}
}

// The sum of kubeReserved, systemReserved and the hard eviction threshold
// is what reservedMemory must add up to; huge pages count per size, and a
// size the machine does not have is left out, as upstream's node
// allocatable reservation only counts the node's capacity.
func TestReservedMemoryAccepted(t *testing.T) {
	machine := memorymanager.FakeMachine(2, 4*gi, memorymanager.HugePages{PageSize: 2 * mi, Pages: 512})
	m, err := memorymanager.New(memorymanager.Options{Policy: "Static", Machine: machine, Logger: quiet,
		ReservedMemory: []kubeletconfig.MemoryReservation{
			reservation(0, "memory", "600Mi", "hugepages-2Mi", "10Mi"),
			reservation(1, "memory", "400Mi"),
		},
		KubeReserved:       list("memory", "500Mi", "hugepages-2Mi", "4Mi", "hugepages-1Gi", "1Gi", "cpu", "1"),
		SystemReserved:     list("memory", "400Mi", "hugepages-2Mi", "6Mi"),
		EvictionHardMemory: resource.MustParse("100Mi"),
	})
	require.NoError(t, err)
	ms := m.MachineState()
	assert.Equal(t, memorymanager.MemoryTable{TotalMemSize: 4 * gi, SystemReserved: 600 * mi, Allocatable: 4*gi - gi - 600*mi, Free: 4*gi - gi - 600*mi}, *ms[0].MemoryMap["memory"])
	assert.Equal(t, memorymanager.MemoryTable{TotalMemSize: gi, SystemReserved: 10 * mi, Allocatable: gi - 10*mi, Free: gi - 10*mi}, *ms[0].MemoryMap["hugepages-2Mi"])
	assert.Equal(t, memorymanager.MemoryTable{TotalMemSize: 4 * gi, SystemReserved: 400 * mi, Allocatable: 3*gi - 400*mi, Free: 3*gi - 400*mi}, *ms[1].MemoryMap["memory"])
	assert.Equal(t, []int{1}, ms[1].Cells)

	// The pod-resources API's allocatable memory, per node and resource.
	var got []string
	for _, cm := range m.AllocatableMemory() {
		got = append(got, fmtMemory(cm))
	}
	assert.Equal(t, []string{
		"hugepages-2Mi 1014Mi on [0]",
		"memory 2472Mi on [0]",
		"hugepages-2Mi 1Gi on [1]",
		"memory 2672Mi on [1]",
	}, got)
}

// Under the policy None (the default) nothing is pinned and nothing is
// allocatable; the reserved memory is not checked.
func TestPolicyNone(t *testing.T) {
	m, err := memorymanager.New(memorymanager.Options{Logger: quiet, StateDir: t.TempDir(),
		ReservedMemory: []kubeletconfig.MemoryReservation{reservation(7, "memory", "1Gi")}})
	require.NoError(t, err)
	assert.Equal(t, memorymanager.PolicyNone, m.Policy())
	p := pod("p", []string{"app c mem=1Gi"})
	ok, _, _ := m.Admit(p, nil)
	assert.True(t, ok)
	assert.Empty(t, m.ContainerMemoryNodes(p, &p.Spec.Containers[0]))
	assert.Nil(t, m.Memory(p.UID, "c"))
	assert.Empty(t, m.AllocatableMemory())
	assert.NotNil(t, m.AllocatableMemory())
	assert.Nil(t, m.ContainerHints(p, &p.Spec.Containers[0]))
}

// The pod-resources API and the CRI config see a container's blocks.
func TestContainerMemory(t *testing.T) {
	m := static(t, 2, "")
	p := pod("p", []string{"app c mem=3Gi hugepages-2Mi=4Mi"})
	ok, reason, msg := m.Admit(p, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	assert.Equal(t, "0-1", m.ContainerMemoryNodes(p, &p.Spec.Containers[0]))
	var got []string
	for _, cm := range m.Memory(p.UID, "c") {
		got = append(got, fmtMemory(cm))
	}
	assert.Equal(t, []string{"hugepages-2Mi 4Mi on [0 1]", "memory 3Gi on [0 1]"}, got)
	assert.Len(t, m.Blocks(p.UID, "c"), 2)
	assert.Nil(t, m.Blocks(p.UID, "nope"))
	m.RemoveContainer(p.UID, "c")
	assert.Empty(t, m.ContainerMemoryNodes(p, &p.Spec.Containers[0]))
}

// static is a static Manager on a machine of n nodes of 4Gi with 1Gi of
// 2Mi huge pages each, 512Mi of memory reserved per node.
func static(t testing.TB, n int, dir string) *memorymanager.Manager {
	t.Helper()
	opts := memorymanager.Options{Policy: "Static", Logger: quiet, StateDir: dir,
		Machine: memorymanager.FakeMachine(n, 4*gi, memorymanager.HugePages{PageSize: 2 * mi, Pages: 512})}
	for i := range n {
		opts.ReservedMemory = append(opts.ReservedMemory, reservation(int32(i), "memory", "512Mi"))
	}
	opts.KubeReserved = v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(int64(n)*512*mi, resource.BinarySI)}
	m, err := memorymanager.New(opts)
	require.NoError(t, err)
	return m
}

func fmtMemory(cm *podresourcesapi.ContainerMemory) string {
	var ids []int64
	for _, n := range cm.GetTopology().GetNodes() {
		ids = append(ids, n.GetID())
	}
	return fmt.Sprintf("%s %s on %v", cm.GetMemoryType(), q(cm.GetSize()), ids)
}
