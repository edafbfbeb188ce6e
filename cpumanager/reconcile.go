package cpumanager

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"
)

// RunningContainer is a container the runtime runs: its pod, its name in
// the pod's spec and its runtime ID.
type RunningContainer struct {
	PodUID types.UID
	Name   string
	ID     string
}

// Update is a cpuset the runtime must give a running container
// (UpdateContainerResources with LinuxContainerResources.CpusetCpus).
type Update struct {
	RunningContainer
	CPUs cpuset.CPUSet
}

// Reconcile is the static policy's periodic pass (cpuManagerReconcilePeriod,
// 10s by default): it releases the CPUs of pods that are no longer active
// (terminated or gone: upstream's removal of stale state), then returns,
// for each running container of an active pod, the cpuset to write when
// it differs from the one last written. The caller writes each and calls
// Failed for those the runtime refused, so that the next pass retries
// them. Under PolicyNone it returns nothing.
func (m *Manager) Reconcile(active []*v1.Pod, running []RunningContainer) []Update {
	if m.o.Policy != PolicyStatic {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	live := make(map[types.UID]struct{}, len(active))
	for _, p := range active {
		live[p.UID] = struct{}{}
	}
	changed := false
	for _, uid := range sortedUIDs(m.st.assignments) {
		if _, ok := live[uid]; !ok {
			changed = m.removePod(uid) || changed
		}
	}
	if changed {
		if err := m.save(); err != nil {
			m.log.Error("Could not write the CPU manager checkpoint", "err", err)
		}
	}
	var out []Update
	seen := make(map[string]struct{}, len(running))
	for _, r := range running {
		seen[r.ID] = struct{}{}
		if _, ok := live[r.PodUID]; !ok {
			continue
		}
		want := m.containerCPUs(r.PodUID, r.Name)
		if want.IsEmpty() {
			continue
		}
		if last, ok := m.applied[r.ID]; ok && last.Equals(want) {
			continue
		}
		m.applied[r.ID] = want
		out = append(out, Update{RunningContainer: r, CPUs: want})
	}
	for id := range m.applied {
		if _, ok := seen[id]; !ok {
			delete(m.applied, id)
		}
	}
	return out
}

// Failed forgets what Reconcile last wrote to a container, so that the
// next pass writes it again.
func (m *Manager) Failed(containerID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.applied, containerID)
}
