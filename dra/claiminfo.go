package dra

import (
	"maps"
	"os"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
)

// claimInfo is a claim the Manager recorded: its checkpointed state, and
// whether it was prepared since the Manager started. A claim read from the
// checkpoint is not counted as prepared, as upstream's: the next sandbox
// that needs it prepares it again (a driver's NodePrepareResources is
// idempotent), and its devices are then the driver's new answer.
type claimInfo struct {
	ClaimState
	prepared bool
}

// newClaimInfo records a claim the node is about to prepare, with an entry
// for each of its drivers.
func newClaimInfo(claim *resourcev1.ResourceClaim, drivers []string) *claimInfo {
	info := &claimInfo{ClaimState: ClaimState{ClaimUID: claim.UID, ClaimName: claim.Name, Namespace: claim.Namespace,
		PodUIDs: uidSet{}, DriverState: make(map[string]DriverState, len(drivers))}}
	for _, d := range drivers {
		info.DriverState[d] = DriverState{}
	}
	return info
}

func key(namespace, name string) string { return namespace + "/" + name }

// withCache runs f with the cache locked, after reading the checkpoint
// the first time; an unreadable checkpoint is every call's error, as it
// is upstream's kubelet's failure to start.
func (m *Manager) withCache(f func() error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loaded {
		m.loaded = true
		m.loadErr = m.restore()
	}
	if m.loadErr != nil {
		return m.loadErr
	}
	return f()
}

// restore reads the checkpoint into the cache (mu held).
func (m *Manager) restore() error {
	if m.stateDir == "" {
		return nil
	}
	states, err := ReadCheckpoint(m.stateDir)
	if err != nil {
		return err
	}
	for _, s := range states {
		if s.PodUIDs == nil {
			s.PodUIDs = uidSet{}
		}
		if s.DriverState == nil {
			s.DriverState = map[string]DriverState{}
		}
		m.cache[key(s.Namespace, s.ClaimName)] = &claimInfo{ClaimState: s}
	}
	if len(states) != 0 {
		m.log.Info("DRA checkpoint restored", "claims", len(states))
	}
	return nil
}

// checkpoint writes the cache to the checkpoint (mu held).
func (m *Manager) checkpoint() error {
	if m.stateDir == "" {
		return nil
	}
	if err := os.MkdirAll(m.stateDir, 0o750); err != nil {
		return err
	}
	states := make([]ClaimState, 0, len(m.cache))
	for _, k := range slices.Sorted(maps.Keys(m.cache)) {
		states = append(states, m.cache[k].ClaimState)
	}
	return writeCheckpoint(m.stateDir, states)
}

// Recorded are the claims the Manager has recorded, sorted by namespace and
// name, as its checkpoint holds them: for tests and for inspection.
func (m *Manager) Recorded() ([]ClaimState, error) {
	var out []ClaimState
	err := m.withCache(func() error {
		for _, k := range slices.Sorted(maps.Keys(m.cache)) {
			s := m.cache[k].ClaimState
			s.PodUIDs = maps.Clone(s.PodUIDs)
			s.DriverState = maps.Clone(s.DriverState)
			out = append(out, s)
		}
		return nil
	})
	return out, err
}
