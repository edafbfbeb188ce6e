package cpumanager

import (
	"fmt"
	"slices"

	"k8s.io/utils/cpuset"
)

// CPU is where one logical CPU sits in the machine: its physical core,
// socket and NUMA node. Core IDs are unique across the machine (two
// sockets' core 0 are different cores), as upstream's topology numbers
// them.
type CPU struct {
	ID, Core, Socket, NUMANode int
}

// Topology is the machine's CPUs as the CPU manager sees them. Build one
// with NewTopology (a fake machine for tests), FromCPUs, or Discover (the
// host's sysfs).
type Topology struct {
	cpus []CPU // sorted by ID
}

// NewTopology builds a regular machine: sockets × coresPerSocket physical
// cores of threadsPerCore CPUs each, every socket split evenly into
// numaPerSocket NUMA nodes. CPUs are numbered as Linux numbers them on most
// x86 machines: first thread of every core (socket by socket), then the
// second thread of every core, so that CPU i and CPU i+sockets×cores are
// siblings.
func NewTopology(sockets, coresPerSocket, threadsPerCore, numaPerSocket int) (*Topology, error) {
	if sockets < 1 || coresPerSocket < 1 || threadsPerCore < 1 || numaPerSocket < 1 {
		return nil, fmt.Errorf("cpumanager: topology %d sockets × %d cores × %d threads, %d NUMA nodes a socket: every count must be at least 1",
			sockets, coresPerSocket, threadsPerCore, numaPerSocket)
	}
	if coresPerSocket%numaPerSocket != 0 {
		return nil, fmt.Errorf("cpumanager: %d cores a socket do not split into %d NUMA nodes", coresPerSocket, numaPerSocket)
	}
	cores := sockets * coresPerSocket
	coresPerNUMA := coresPerSocket / numaPerSocket
	var cpus []CPU
	for t := range threadsPerCore {
		for core := range cores {
			s := core / coresPerSocket
			cpus = append(cpus, CPU{ID: t*cores + core, Core: core, Socket: s, NUMANode: s*numaPerSocket + (core%coresPerSocket)/coresPerNUMA})
		}
	}
	return FromCPUs(cpus)
}

// FromCPUs builds a topology from a list of CPUs (any order). IDs must be
// unique and non-negative, and a core must not span sockets.
func FromCPUs(cpus []CPU) (*Topology, error) {
	if len(cpus) == 0 {
		return nil, fmt.Errorf("cpumanager: a topology needs at least one CPU")
	}
	out := slices.Clone(cpus)
	slices.SortFunc(out, func(a, b CPU) int { return a.ID - b.ID })
	coreSocket := map[int]int{}
	for i, c := range out {
		if c.ID < 0 || c.Core < 0 || c.Socket < 0 || c.NUMANode < 0 {
			return nil, fmt.Errorf("cpumanager: CPU %d: negative ID, core, socket or NUMA node", c.ID)
		}
		if i > 0 && out[i-1].ID == c.ID {
			return nil, fmt.Errorf("cpumanager: CPU %d listed twice", c.ID)
		}
		if s, ok := coreSocket[c.Core]; ok && s != c.Socket {
			return nil, fmt.Errorf("cpumanager: core %d is on sockets %d and %d", c.Core, s, c.Socket)
		}
		coreSocket[c.Core] = c.Socket
	}
	return &Topology{cpus: out}, nil
}

// CPUs returns the machine's CPUs, sorted by ID.
func (t *Topology) CPUs() []CPU { return slices.Clone(t.cpus) }

// All returns every CPU's ID.
func (t *Topology) All() cpuset.CPUSet { return t.filter(func(CPU) bool { return true }) }

// NumCPUs is the number of logical CPUs.
func (t *Topology) NumCPUs() int { return len(t.cpus) }

// NumCores is the number of physical cores.
func (t *Topology) NumCores() int { return len(t.ids(func(c CPU) int { return c.Core })) }

// NumSockets is the number of sockets.
func (t *Topology) NumSockets() int { return len(t.ids(func(c CPU) int { return c.Socket })) }

// NUMANodes returns the NUMA node IDs, sorted.
func (t *Topology) NUMANodes() []int { return t.ids(func(c CPU) int { return c.NUMANode }) }

// CPUsPerCore is the number of threads of a core (1 without SMT); on an
// irregular machine, the count of the first core.
func (t *Topology) CPUsPerCore() int {
	return t.filter(func(c CPU) bool { return c.Core == t.cpus[0].Core }).Size()
}

// CPUsPerSocket is the number of CPUs of the first socket.
func (t *Topology) CPUsPerSocket() int {
	return t.filter(func(c CPU) bool { return c.Socket == t.cpus[0].Socket }).Size()
}

// CPUsInNUMANodes returns the CPUs of the given NUMA nodes.
func (t *Topology) CPUsInNUMANodes(nodes ...int) cpuset.CPUSet {
	return t.filter(func(c CPU) bool { return slices.Contains(nodes, c.NUMANode) })
}

// NUMANodesOf returns the NUMA nodes the given CPUs are on, sorted.
func (t *Topology) NUMANodesOf(cpus cpuset.CPUSet) []int {
	var out []int
	for _, c := range t.cpus {
		if cpus.Contains(c.ID) && !slices.Contains(out, c.NUMANode) {
			out = append(out, c.NUMANode)
		}
	}
	slices.Sort(out)
	return out
}

// cpu returns the CPU of an ID.
func (t *Topology) cpu(id int) (CPU, bool) {
	i, ok := slices.BinarySearchFunc(t.cpus, id, func(c CPU, id int) int { return c.ID - id })
	if !ok {
		return CPU{}, false
	}
	return t.cpus[i], true
}

func (t *Topology) filter(keep func(CPU) bool) cpuset.CPUSet {
	b := make([]int, 0, len(t.cpus))
	for _, c := range t.cpus {
		if keep(c) {
			b = append(b, c.ID)
		}
	}
	return cpuset.New(b...)
}

func (t *Topology) ids(of func(CPU) int) []int {
	var out []int
	for _, c := range t.cpus {
		if id := of(c); !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
