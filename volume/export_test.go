package volume

// Busy reports how many operations are in flight, for tests that must
// wait until the reconciler is idle.
func Busy(m *Manager) int64 { return m.busy.Load() }

// CSIAccessMode is csiAccessMode, for its table test.
var CSIAccessMode = csiAccessMode

// StatFS is what a test's statfs answers (see SetStatfs).
type StatFS struct{ Blocks, Bfree, Bavail, Files, Ffree, Bsize uint64 }

// SetStatfs makes the local plugin of m ask f instead of statfs(2); call
// it before m runs.
func SetStatfs(m *Manager, f func(path string) (StatFS, error)) {
	m.byName[LocalPluginName].(*localPlugin).statfs = func(path string) (statFS, error) {
		s, err := f(path)
		return statFS{blocks: s.Blocks, bfree: s.Bfree, bavail: s.Bavail, files: s.Files, ffree: s.Ffree, bsize: s.Bsize}, err
	}
}

// CSIFsStats is csiFsStats, for its table test.
var CSIFsStats = csiFsStats
