package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// owners records the pod cgroups a Manager made, so that it removes only
// those: two agents on one host (under one cgroup root or two) see each
// other's pod cgroups, and each would otherwise take the other's for
// orphans.
//
// The record is a set of names in memory and, with a directory, one empty
// file per cgroup under it, at the cgroup's cgroupfs path
// (dir/kubepods/burstable/pod<uid>) whichever driver spells it, so that an
// agent restarted with the same directory owns what it made before. A file
// is written before its cgroup is made and removed after the cgroup is
// gone, so that a crash in between leaves a record of a cgroup that may
// not exist, never a cgroup without its record. The files are not synced:
// they need to outlive the process, not the machine, whose cgroups go
// with it; load drops the records of cgroups that no longer exist.
type owners struct {
	dir string // "" keeps the record in memory only

	mu  sync.Mutex
	set map[string]struct{} // Name.Cgroupfs() of each cgroup made
	// foreign are the pod cgroups found that this Manager did not make,
	// each logged once.
	foreign map[string]struct{}
}

func newOwners(dir string) *owners {
	return &owners{dir: dir, set: map[string]struct{}{}, foreign: map[string]struct{}{}}
}

// file is the record of n on disk.
func (o *owners) file(n Name) string {
	return filepath.Join(o.dir, filepath.FromSlash(n.Cgroupfs()))
}

// load reads the records kept in the directory; the record of a cgroup
// that gone says is gone (the machine restarted, say) is removed. A file
// whose path is not a cgroup name is left alone.
func (o *owners) load(gone func(Name) bool) error {
	if o.dir == "" {
		return nil
	}
	var names []Name
	err := filepath.WalkDir(o.dir, func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == o.dir {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(o.dir, p)
		if err != nil {
			return nil
		}
		n := Name(strings.Split(filepath.ToSlash(rel), "/"))
		for _, c := range n {
			if ValidComponent(c) != nil {
				return nil
			}
		}
		names = append(names, n)
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the records of the cgroups made: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range names {
		if gone(n) {
			if err := os.Remove(o.file(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("forget cgroup %s: %w", n.Cgroupfs(), err)
			}
			continue
		}
		o.set[n.Cgroupfs()] = struct{}{}
	}
	return nil
}

// add records n, on disk first.
func (o *owners) add(n Name) error {
	if o.dir != "" {
		f := o.file(n)
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return fmt.Errorf("record cgroup %s: %w", n.Cgroupfs(), err)
		}
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			return fmt.Errorf("record cgroup %s: %w", n.Cgroupfs(), err)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.set[n.Cgroupfs()] = struct{}{}
	delete(o.foreign, n.Cgroupfs())
	return nil
}

// has says whether n is recorded.
func (o *owners) has(n Name) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.set[n.Cgroupfs()]
	return ok
}

// remove forgets n, its cgroup gone.
func (o *owners) remove(n Name) error {
	o.mu.Lock()
	delete(o.set, n.Cgroupfs())
	o.mu.Unlock()
	if o.dir == "" {
		return nil
	}
	if err := os.Remove(o.file(n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget cgroup %s: %w", n.Cgroupfs(), err)
	}
	return nil
}

// firstSeen notes n as a cgroup found that is not recorded, and says
// whether it is the first time.
func (o *owners) firstSeen(n Name) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.foreign[n.Cgroupfs()]; ok {
		return false
	}
	o.foreign[n.Cgroupfs()] = struct{}{}
	return true
}

// keepForeign forgets the foreign cgroups that are not among found (by
// Name.Cgroupfs), so that the set holds only cgroups that are there.
func (o *owners) keepForeign(found map[string]struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.foreign {
		if _, ok := found[k]; !ok {
			delete(o.foreign, k)
		}
	}
}
