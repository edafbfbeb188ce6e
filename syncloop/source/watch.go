package source

import (
	"time"
)

// maxWriteWait is how long the file source waits for a manifest that is
// being written (created or modified, not yet closed) before it reads it
// anyway: a writer that keeps its file open is seen after this long.
const maxWriteWait = time.Second

// watcher tells the file source what changed under its Path. On Linux it is
// inotify (newInotify); elsewhere there is none and the source polls. Its
// only goroutine is the one that reads the kernel's events; the decisions
// (what to read, when) are the source's, on its clock.
type watcher interface {
	// Ready is signalled (capacity one) when changes are pending.
	Ready() <-chan struct{}
	// Take returns the changes pending since the last Take and forgets
	// them.
	Take() watchBatch
	// Arm places the watches for Path as it is now: on Path when it is a
	// directory, and on its parent, which sees Path itself created,
	// removed or replaced. It reports whether they are enough to see every
	// change; when not (Path and its parent are missing, the kernel's
	// watch limit is reached), err says why and the source polls.
	Arm() (ok bool, err error)
	// Close stops watching and returns when the goroutine has ended.
	Close() error
}

// watchOp is what a watcher saw happen to a manifest.
type watchOp uint8

const (
	// opChanged: written and closed, created (but not as an empty regular
	// file: a link, a directory), renamed to or from, removed.
	opChanged watchOp = iota + 1
	// opWriting: modified, or created empty, and not yet closed: the
	// manifest may be half written.
	opWriting
	// opAttrib: its mode, times or link count changed; it is read again
	// only if its size, modification time or mode changed.
	opAttrib
)

// watchBatch is the changes a watcher gathered since its last Take. A burst
// of events (a copy of many files, a write to a temporary file and a
// rename) comes as one batch when the source is busy, and one batch makes
// one read and one SET.
type watchBatch struct {
	// ops is the last operation seen on each manifest, by path (a file of
	// the directory, or Path itself when it is a file). Hidden files are
	// left out.
	ops map[string]watchOp
	// gone are the manifests removed or renamed away during the batch,
	// whatever came after (one removed and created again is in both):
	// the source sends its pods' removal before it reads them again, as
	// upstream's file source, which acts on each event, does.
	gone map[string]bool
	// rescan: Path itself was created, removed or replaced: arm again and
	// list the directory.
	rescan bool
	// overflow: the kernel dropped events: read everything.
	overflow bool
	// err ends the watch: the watcher stopped working and the source
	// polls from now on.
	err error
}

// add records op on path, keeping a manifest that is being written so
// while only its attributes change.
func (b *watchBatch) add(path string, op watchOp) {
	if b.ops == nil {
		b.ops = map[string]watchOp{}
	}
	if op == opAttrib && b.ops[path] == opWriting {
		return
	}
	b.ops[path] = op
}

// remove records that path was removed or renamed away.
func (b *watchBatch) remove(path string) {
	if b.gone == nil {
		b.gone = map[string]bool{}
	}
	b.gone[path] = true
}

// empty reports whether b holds nothing.
func (b *watchBatch) empty() bool {
	return len(b.ops) == 0 && !b.rescan && !b.overflow && b.err == nil
}
