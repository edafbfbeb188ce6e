package cpumanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
	"github.com/kubeletkit/kubeletkit/internal/checksum"
)

// checkpoint is the file's shape, upstream's fields: the policy, the
// shared pool and each container's exclusive CPUs in Linux list syntax.
// The checksum is ours (FNV-32a of the JSON with a zero checksum), so a
// file written by upstream kubelet is refused as damaged rather than
// half-read.
type checkpoint struct {
	PolicyName    string                          `json:"policyName"`
	DefaultCPUSet string                          `json:"defaultCpuSet"`
	Entries       map[types.UID]map[string]string `json:"entries,omitempty"`
	Checksum      uint32                          `json:"checksum"`
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
	c := checkpoint{PolicyName: m.st.policy, DefaultCPUSet: m.st.defaultSet.String()}
	if m.st.policy == PolicyNone {
		c.DefaultCPUSet = ""
	}
	for uid, cs := range m.st.assignments {
		if c.Entries == nil {
			c.Entries = map[types.UID]map[string]string{}
		}
		c.Entries[uid] = map[string]string{}
		for name, s := range cs {
			c.Entries[uid][name] = s.String()
		}
	}
	sum, err := c.sum()
	if err != nil {
		return err
	}
	c.Checksum = sum
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	return atomicfile.WriteJSON(path, c)
}

// restore reads the checkpoint, or writes a first one.
func (m *Manager) restore() error {
	path := m.statePath()
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		// Written at the first change: StateDir may not exist yet (the
		// agent makes its root directory when it runs).
		return nil
	}
	if err != nil {
		return fmt.Errorf("cpumanager: %w", err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("cpumanager: checkpoint %s: %s: drain the node and remove the file", path, fmt.Sprintf(format, args...))
	}
	var c checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return bad("%v", err)
	}
	if sum, err := c.sum(); err != nil || sum != c.Checksum {
		return bad("checksum mismatch: the file is damaged or not this kubelet's")
	}
	if c.PolicyName != m.o.Policy {
		return bad("configured policy %q differs from state checkpoint policy %q", m.o.Policy, c.PolicyName)
	}
	if m.o.Policy != PolicyStatic {
		return nil
	}
	def, err := cpuset.Parse(c.DefaultCPUSet)
	if err != nil {
		return bad("defaultCpuSet: %v", err)
	}
	st := state{policy: c.PolicyName, defaultSet: def, assignments: map[types.UID]map[string]cpuset.CPUSet{}}
	held := cpuset.New()
	for _, uid := range sortedUIDs(c.Entries) {
		st.assignments[uid] = map[string]cpuset.CPUSet{}
		for name, list := range c.Entries[uid] {
			s, err := cpuset.Parse(list)
			if err != nil {
				return bad("pod %s container %s: %v", uid, name, err)
			}
			if !s.Intersection(def).IsEmpty() {
				return bad("pod: %s, container: %s cpuset: %q overlaps with default cpuset %q", uid, name, s, def)
			}
			st.assignments[uid][name] = s
			held = held.Union(s)
		}
	}
	if def.IsEmpty() && len(st.assignments) == 0 {
		// A checkpoint written before any CPU was known: start afresh.
		return m.save()
	}
	if !m.reserved.IsSubsetOf(def) {
		return bad("not all reserved cpus: %q are present in defaultCpuSet: %q", m.reserved, def)
	}
	if all := m.o.Topology.All(); !all.Equals(def.Union(held)) {
		return bad("current set of available CPUs %q doesn't match with CPUs in state %q", all, def.Union(held))
	}
	m.st = st
	return nil
}
