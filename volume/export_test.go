package volume

// Busy reports how many operations are in flight, for tests that must
// wait until the reconciler is idle.
func Busy(m *Manager) int64 { return m.busy.Load() }

// CSIAccessMode is csiAccessMode, for its table test.
var CSIAccessMode = csiAccessMode
