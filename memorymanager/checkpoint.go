package memorymanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
	"github.com/kubeletkit/kubeletkit/internal/checksum"
)

// checkpoint is the file's shape, upstream's fields: the policy, every
// NUMA node's memory accounts and each container's blocks. The checksum
// is ours (FNV-32a of the JSON with a zero checksum), so a file written by
// upstream kubelet is refused as corrupted rather than half-read.
type checkpoint struct {
	PolicyName   string                           `json:"policyName"`
	MachineState map[int]*NUMANodeState           `json:"machineState"`
	Entries      map[types.UID]map[string][]Block `json:"entries,omitempty"`
	Checksum     uint32                           `json:"checksum"`
}

func (c checkpoint) sum() (uint32, error) {
	c.Checksum = 0
	return checksum.JSON(c)
}

// save writes the state (mu held).
func (m *Manager) save() error {
	path := m.statePath()
	if path == "" {
		return nil
	}
	c := checkpoint{PolicyName: m.o.Policy, MachineState: m.st.machine}
	if len(m.st.assignments) > 0 {
		c.Entries = m.st.assignments
	}
	sum, err := c.sum()
	if err != nil {
		return err
	}
	c.Checksum = sum
	return atomicfile.WriteJSON(path, c)
}

// restore reads the checkpoint, or writes a first one. Errors are
// upstream's, wrapped as upstream wraps them.
func (m *Manager) restore() error {
	path := m.statePath()
	if path == "" {
		return nil
	}
	fail := func(err error) error {
		return fmt.Errorf("memorymanager: could not restore state from checkpoint: %w, please drain this node and delete the memory manager checkpoint file %q before restarting Kubelet", err, path)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m.save()
	}
	if err != nil {
		return fail(err)
	}
	var c checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return fail(err)
	}
	if sum, err := c.sum(); err != nil || sum != c.Checksum {
		return fail(errors.New("checkpoint is corrupted"))
	}
	if c.PolicyName != m.o.Policy {
		return fail(fmt.Errorf("[memorymanager] configured policy %q differs from state checkpoint policy %q", m.o.Policy, c.PolicyName))
	}
	if m.o.Policy != PolicyStatic {
		return nil
	}
	st := state{machine: machineState(c.MachineState), assignments: c.Entries}
	if st.assignments == nil {
		st.assignments = map[types.UID]map[string][]Block{}
	}
	if st.machine == nil {
		st.machine = machineState{}
	}
	if err := m.validate(st); err != nil {
		m.log.Error("Invalid state, please drain node and remove policy state file", "err", err)
		return err
	}
	return m.save()
}

// validate checks a restored state against the machine and the
// reservations: replaying its assignments on a fresh machine state must
// give its machine state (upstream's validateState). An empty machine
// state without assignments is a fresh start.
func (m *Manager) validate(st state) error {
	if len(st.machine) == 0 {
		if len(st.assignments) != 0 {
			return errors.New("[memorymanager] machine state can not be empty when it has memory assignments")
		}
		return nil
	}
	want := defaultMachineState(m.o.Machine, m.reserved)
	for _, uid := range sortedKeys(st.assignments) {
		for _, name := range sortedKeys(st.assignments[uid]) {
			for _, b := range st.assignments[uid][name] {
				for _, id := range b.NUMAAffinity {
					n, ok := want[id]
					if !ok {
						return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses the NUMA that does not exist", uid, name)
					}
					if _, ok := n.MemoryMap[b.Type]; !ok {
						return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses memory resource that does not exist", uid, name)
					}
				}
				want.reserve(b.NUMAAffinity, b.Type, b.Size)
			}
		}
	}
	if !equalStates(st.machine, want) {
		return errors.New("[memorymanager] the expected machine state is different from the real one")
	}
	m.st = st
	return nil
}

// equalStates compares two machine states as upstream does: the same
// nodes, assignments, groups and totals, and within each group the same
// free and reserved memory.
func equalStates(a, b machineState) bool {
	if len(a) != len(b) {
		return false
	}
	for id, na := range a {
		nb, ok := b[id]
		if !ok || na == nil || nb == nil || na.NumberOfAssignments != nb.NumberOfAssignments || !sameGroup(na.Cells, nb.Cells) || len(na.MemoryMap) != len(nb.MemoryMap) {
			return false
		}
		for name, ta := range na.MemoryMap {
			tb, ok := nb.MemoryMap[name]
			if !ok || ta == nil || tb == nil || ta.TotalMemSize != tb.TotalMemSize || ta.SystemReserved != tb.SystemReserved || ta.Allocatable != tb.Allocatable {
				return false
			}
			var fa, ra, fb, rb uint64
			for _, cell := range na.Cells {
				x, y := a.table(cell, name), b.table(cell, name)
				fa, ra, fb, rb = fa+x.Free, ra+x.Reserved, fb+y.Free, rb+y.Reserved
			}
			if fa != fb || ra != rb {
				return false
			}
		}
	}
	return true
}

func sameGroup(a, b []int) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
