package memorymanager

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HugePages are the pre-allocated huge pages of one size on a NUMA node.
type HugePages struct {
	// PageSize is the size of one page in bytes (2097152 for 2Mi pages).
	PageSize uint64
	// Pages is how many pages of that size the node holds (nr_hugepages).
	Pages uint64
}

// ResourceName is the pages' resource name, "hugepages-2Mi" for 2Mi pages.
func (h HugePages) ResourceName() v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(int64(h.PageSize), resource.BinarySI).String())
}

// Total is the bytes the pages hold together.
func (h HugePages) Total() uint64 { return h.PageSize * h.Pages }

// NUMANode is one NUMA node's memory.
type NUMANode struct {
	// ID is the node's number (0..63), as in /sys/devices/system/node/nodeN.
	ID int
	// Memory is the node's memory in bytes (MemTotal of its meminfo), huge
	// pages included.
	Memory uint64
	// HugePages are the node's huge pages, one entry per page size.
	HugePages []HugePages
}

// Machine is the memory of a machine's NUMA nodes, what the memory manager
// allocates from (upstream reads it from cadvisor's MachineInfo.Topology).
// It is immutable.
type Machine struct {
	nodes []NUMANode
}

// NewMachine returns the machine of the given NUMA nodes, sorted by ID.
// IDs must be distinct and in 0..63, page sizes positive and distinct per
// node, and a node's huge pages may not exceed its memory.
func NewMachine(nodes ...NUMANode) (*Machine, error) {
	if len(nodes) == 0 {
		return nil, errors.New("memorymanager: a machine needs at least one NUMA node")
	}
	out := make([]NUMANode, 0, len(nodes))
	seen := map[int]bool{}
	for _, n := range nodes {
		if n.ID < 0 || n.ID > 63 {
			return nil, fmt.Errorf("memorymanager: NUMA node %d: IDs go from 0 to 63", n.ID)
		}
		if seen[n.ID] {
			return nil, fmt.Errorf("memorymanager: NUMA node %d given twice", n.ID)
		}
		seen[n.ID] = true
		var huge uint64
		sizes := map[uint64]bool{}
		for _, h := range n.HugePages {
			if h.PageSize == 0 || sizes[h.PageSize] {
				return nil, fmt.Errorf("memorymanager: NUMA node %d: huge page size %d is zero or given twice", n.ID, h.PageSize)
			}
			sizes[h.PageSize] = true
			huge += h.Total()
		}
		if huge > n.Memory {
			return nil, fmt.Errorf("memorymanager: NUMA node %d: huge pages of %d bytes exceed its memory of %d bytes", n.ID, huge, n.Memory)
		}
		hp := slices.Clone(n.HugePages)
		slices.SortFunc(hp, func(a, b HugePages) int { return cmp.Compare(a.PageSize, b.PageSize) })
		out = append(out, NUMANode{ID: n.ID, Memory: n.Memory, HugePages: hp})
	}
	slices.SortFunc(out, func(a, b NUMANode) int { return cmp.Compare(a.ID, b.ID) })
	return &Machine{nodes: out}, nil
}

// FakeMachine returns, for tests, a machine of numaNodes identical nodes
// (IDs 0..numaNodes-1), each with memory bytes and the given huge pages.
// It panics on what NewMachine refuses, as a test fixture would.
func FakeMachine(numaNodes int, memory uint64, hugePages ...HugePages) *Machine {
	nodes := make([]NUMANode, numaNodes)
	for i := range nodes {
		nodes[i] = NUMANode{ID: i, Memory: memory, HugePages: hugePages}
	}
	m, err := NewMachine(nodes...)
	if err != nil {
		panic(err)
	}
	return m
}

// Nodes returns the machine's NUMA nodes, sorted by ID.
func (m *Machine) Nodes() []NUMANode {
	out := make([]NUMANode, len(m.nodes))
	for i, n := range m.nodes {
		out[i] = NUMANode{ID: n.ID, Memory: n.Memory, HugePages: slices.Clone(n.HugePages)}
	}
	return out
}

// NUMANodes returns the NUMA node IDs, sorted (topologymanager.Options'
// NUMANodes).
func (m *Machine) NUMANodes() []int {
	out := make([]int, len(m.nodes))
	for i, n := range m.nodes {
		out[i] = n.ID
	}
	return out
}

// resourceNames are the memory resources the machine has: memory and each
// huge page size found on some node.
func (m *Machine) resourceNames() map[v1.ResourceName]bool {
	out := map[v1.ResourceName]bool{v1.ResourceMemory: true}
	for _, n := range m.nodes {
		for _, h := range n.HugePages {
			out[h.ResourceName()] = true
		}
	}
	return out
}

// Discover reads the machine's NUMA memory from a sysfs tree (root "/sys"
// on a host; a directory of the same shape in tests): for each
// devices/system/node/nodeN, the MemTotal line of its meminfo and, for
// each hugepages/hugepages-<size>kB directory, its nr_hugepages. A tree
// without NUMA nodes is an error.
func Discover(sysfsRoot string) (*Machine, error) {
	dirs, _ := filepath.Glob(filepath.Join(sysfsRoot, "devices", "system", "node", "node[0-9]*"))
	var nodes []NUMANode
	for _, dir := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		mem, err := memTotal(filepath.Join(dir, "meminfo"))
		if err != nil {
			return nil, fmt.Errorf("memorymanager: NUMA node %d: %w", id, err)
		}
		n := NUMANode{ID: id, Memory: mem}
		sizes, _ := filepath.Glob(filepath.Join(dir, "hugepages", "hugepages-*kB"))
		for _, s := range sizes {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), "hugepages-"), "kB"), 10, 64)
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(s, "nr_hugepages"))
			if err != nil {
				return nil, fmt.Errorf("memorymanager: NUMA node %d: %w", id, err)
			}
			pages, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("memorymanager: NUMA node %d: %s: %w", id, filepath.Join(s, "nr_hugepages"), err)
			}
			n.HugePages = append(n.HugePages, HugePages{PageSize: kb * 1024, Pages: pages})
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("memorymanager: no NUMA nodes under %s", filepath.Join(sysfsRoot, "devices", "system", "node"))
	}
	return NewMachine(nodes...)
}

// memTotal reads "Node N MemTotal: X kB" from a node's meminfo, in bytes.
func memTotal(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "MemTotal:" {
				continue
			}
			v, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", path, err)
			}
			if i+2 < len(f) && f[i+2] == "kB" {
				v *= 1024
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("%s: no MemTotal line", path)
}
