package memorymanager

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// MemoryTable is one memory resource (memory or a huge page size) on one
// NUMA node, upstream's state.MemoryTable: TotalMemSize = SystemReserved
// + Allocatable (for memory, less the huge pages), Allocatable = Reserved
// + Free. The JSON names are the checkpoint's.
type MemoryTable struct {
	// TotalMemSize is the node's bytes of the resource.
	TotalMemSize uint64 `json:"total"`
	// SystemReserved is what reservedMemory keeps for the system.
	SystemReserved uint64 `json:"systemReserved"`
	// Allocatable is what containers may be given.
	Allocatable uint64 `json:"allocatable"`
	// Reserved is what containers hold.
	Reserved uint64 `json:"reserved"`
	// Free is what is left to give.
	Free uint64 `json:"free"`
}

// NUMANodeState is one NUMA node's memory, upstream's state.NUMANodeState.
type NUMANodeState struct {
	// NumberOfAssignments counts the blocks placed on the node (a container
	// asking memory and huge pages makes two).
	NumberOfAssignments int `json:"numberOfAssignments"`
	// MemoryMap is the node's memory by resource name.
	MemoryMap map[v1.ResourceName]*MemoryTable `json:"memoryMap"`
	// Cells are the nodes the node is grouped with: itself alone, or every
	// node of a multi-NUMA allocation that uses it. A node in a group is
	// not used for single-NUMA allocations and a node used alone not for
	// multi-NUMA ones.
	Cells []int `json:"cells"`
}

func (n *NUMANodeState) clone() *NUMANodeState {
	c := &NUMANodeState{NumberOfAssignments: n.NumberOfAssignments, Cells: slices.Clone(n.Cells), MemoryMap: make(map[v1.ResourceName]*MemoryTable, len(n.MemoryMap))}
	for k, t := range n.MemoryMap {
		cp := *t
		c.MemoryMap[k] = &cp
	}
	return c
}

// Block is memory given to a container: Size bytes of resource Type on the
// NUMA nodes NUMAAffinity, upstream's state.Block.
type Block struct {
	NUMAAffinity []int           `json:"numaAffinity"`
	Type         v1.ResourceName `json:"type"`
	Size         uint64          `json:"size"`
}

func (b Block) mask() topologymanager.Mask { return topologymanager.NewMask(b.NUMAAffinity...) }

func cloneBlocks(bs []Block) []Block {
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = Block{NUMAAffinity: slices.Clone(b.NUMAAffinity), Type: b.Type, Size: b.Size}
	}
	return out
}

// machineState is the NUMA nodes' memory, by node ID.
type machineState map[int]*NUMANodeState

func (ms machineState) clone() machineState {
	out := make(machineState, len(ms))
	for id, n := range ms {
		out[id] = n.clone()
	}
	return out
}

// table returns a resource's table on a node, a zero one when the node
// does not have the resource.
func (ms machineState) table(node int, r v1.ResourceName) MemoryTable {
	if n := ms[node]; n != nil {
		if t := n.MemoryMap[r]; t != nil {
			return *t
		}
	}
	return MemoryTable{}
}

func (ms machineState) nodes() []int { return slices.Sorted(maps.Keys(ms)) }

// state is what the checkpoint holds.
type state struct {
	machine     machineState
	assignments map[types.UID]map[string][]Block
}

// defaultMachineState is the machine with nothing allocated: per node and
// resource, the total, what reservedMemory keeps, and the rest allocatable
// and free; huge pages come out of memory's allocatable.
func defaultMachineState(m *Machine, reserved map[int]map[v1.ResourceName]uint64) machineState {
	out := machineState{}
	for _, n := range m.nodes {
		st := &NUMANodeState{MemoryMap: map[v1.ResourceName]*MemoryTable{}, Cells: []int{n.ID}}
		var huge uint64
		for _, h := range n.HugePages {
			name := h.ResourceName()
			r := reserved[n.ID][name]
			st.MemoryMap[name] = &MemoryTable{TotalMemSize: h.Total(), SystemReserved: r, Allocatable: h.Total() - r, Free: h.Total() - r}
			huge += h.Total()
		}
		r := reserved[n.ID][v1.ResourceMemory]
		alloc := n.Memory - r - huge
		st.MemoryMap[v1.ResourceMemory] = &MemoryTable{TotalMemSize: n.Memory, SystemReserved: r, Allocatable: alloc, Free: alloc}
		out[n.ID] = st
	}
	return out
}

// reserve takes size bytes of resource r from the nodes' free memory, in
// node order, and counts an assignment on every node of the group. size 0
// only counts.
func (ms machineState) reserve(nodes []int, r v1.ResourceName, size uint64) {
	for _, id := range nodes {
		n := ms[id]
		if n == nil {
			continue
		}
		n.NumberOfAssignments++
		n.Cells = slices.Clone(nodes)
		t := n.MemoryMap[r]
		if size == 0 || t == nil || t.Free == 0 {
			continue
		}
		take := min(size, t.Free)
		t.Reserved += take
		t.Free -= take
		size -= take
	}
}

// release gives a block back: size bytes return to the nodes' free memory
// in node order, and a node with no assignment left is alone again.
func (ms machineState) release(b Block) {
	size := b.Size
	for _, id := range b.NUMAAffinity {
		n := ms[id]
		if n == nil {
			continue
		}
		n.NumberOfAssignments--
		if n.NumberOfAssignments == 0 {
			n.Cells = []int{id}
		}
		t := n.MemoryMap[b.Type]
		if size == 0 || t == nil || t.Reserved == 0 {
			continue
		}
		give := min(size, t.Reserved)
		t.Reserved -= give
		t.Free += give
		size -= give
	}
}
