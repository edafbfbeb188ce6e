//go:build linux

package source

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// inotifyMask is what the file source watches for: files created, written,
// closed after writing, renamed, removed or changed in mode, and the watched
// directory itself removed or renamed. Reads (IN_ACCESS, IN_CLOSE_NOWRITE)
// are left out, so the source's own reads wake nothing.
const inotifyMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR

// selfGone are the events that end a watch on a directory.
const selfGone = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_IGNORED | unix.IN_UNMOUNT

// inotifyBufferSize holds a few hundred events per read; a burst larger than
// that takes several reads, which the batch absorbs.
const inotifyBufferSize = 16 << 10

// inotifyWatcher is the watcher on Linux: one inotify instance with a watch
// on Path (when it is a directory) and one on its parent, and a goroutine
// that reads the events into a batch.
type inotifyWatcher struct {
	path, parent, base string
	fd                 int
	file               *os.File // fd, pollable: Close wakes the blocked Read
	ready              chan struct{}
	done               chan struct{}

	mu        sync.Mutex
	dirWD     int // the watch on Path, or -1
	parentWD  int // the watch on Path's parent, or -1
	pending   watchBatch
	closeOnce sync.Once
}

var _ watcher = (*inotifyWatcher)(nil)

// newInotify starts watching path with inotify; Arm places the watches. It
// fails when the kernel gives no inotify instance (the per-user limit,
// fs.inotify.max_user_instances, is 128 by default).
func newInotify(path string) (watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &inotifyWatcher{
		path:     path,
		parent:   filepath.Dir(path),
		base:     filepath.Base(path),
		fd:       fd,
		file:     os.NewFile(uintptr(fd), "inotify"),
		ready:    make(chan struct{}, 1),
		done:     make(chan struct{}),
		dirWD:    -1,
		parentWD: -1,
	}
	go w.run()
	return w, nil
}

func (w *inotifyWatcher) Ready() <-chan struct{} { return w.ready }

func (w *inotifyWatcher) Take() watchBatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.pending
	w.pending = watchBatch{}
	return b
}

func (w *inotifyWatcher) Arm() (bool, error) {
	st, err := os.Stat(w.path)
	isDir := err == nil && st.IsDir()
	// Held while the watches change, so that the reader never takes an
	// event of a new watch for one it does not know.
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	parentWD, perr := unix.InotifyAddWatch(w.fd, w.parent, inotifyMask)
	if perr != nil {
		parentWD = -1
		errs = append(errs, fmt.Errorf("watch %s: %w", w.parent, perr))
	}
	dirWD := -1
	if isDir {
		var derr error
		if dirWD, derr = unix.InotifyAddWatch(w.fd, w.path, inotifyMask); derr != nil {
			dirWD = -1
			errs = append(errs, fmt.Errorf("watch %s: %w", w.path, derr))
		}
	}
	old := w.dirWD
	w.dirWD, w.parentWD = dirWD, parentWD
	if old >= 0 && old != dirWD && old != parentWD {
		// Path was replaced (renamed away, a symlink retargeted): stop
		// watching the directory it was. A watch the kernel already
		// removed gives EINVAL, which is fine.
		_, _ = unix.InotifyRmWatch(w.fd, uint32(old))
	}
	if isDir {
		return dirWD >= 0, errors.Join(errs...)
	}
	return parentWD >= 0, errors.Join(errs...)
}

func (w *inotifyWatcher) Close() error {
	var err error
	w.closeOnce.Do(func() {
		err = w.file.Close()
		<-w.done
	})
	return err
}

// run reads events until the file is closed (or fails, which ends the
// watch: the batch carries the error).
func (w *inotifyWatcher) run() {
	defer close(w.done)
	buf := make([]byte, inotifyBufferSize)
	var evs []rawEvent
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			w.mu.Lock()
			w.pending.err = fmt.Errorf("read inotify events: %w", err)
			w.mu.Unlock()
			w.signal()
			return
		}
		evs = parseInotify(evs[:0], buf[:n])
		w.deliver(evs)
	}
}

// rawEvent is one inotify event.
type rawEvent struct {
	wd   int
	mask uint32
	name string
}

// parseInotify appends the events in b, as the kernel lays them out
// (struct inotify_event: wd, mask, cookie, len, then a NUL-padded name).
func parseInotify(evs []rawEvent, b []byte) []rawEvent {
	for len(b) >= unix.SizeofInotifyEvent {
		n := int(binary.NativeEndian.Uint32(b[12:]))
		if unix.SizeofInotifyEvent+n > len(b) {
			break // the kernel returns whole events; this is not one
		}
		name := b[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+n]
		if i := strings.IndexByte(string(name), 0); i >= 0 {
			name = name[:i]
		}
		evs = append(evs, rawEvent{
			wd:   int(int32(binary.NativeEndian.Uint32(b))),
			mask: binary.NativeEndian.Uint32(b[4:]),
			name: string(name),
		})
		b = b[unix.SizeofInotifyEvent+n:]
	}
	return evs
}

// deliver adds a read's events to the pending batch and signals it.
func (w *inotifyWatcher) deliver(evs []rawEvent) {
	type change struct {
		path   string
		op     watchOp
		rescan bool
		gone   bool // removed or renamed away
	}
	w.mu.Lock()
	dirWD, parentWD := w.dirWD, w.parentWD
	w.mu.Unlock()
	// Classified without the lock: classifying may stat a file.
	var changes []change
	overflow := false
	for _, e := range evs {
		switch {
		case e.mask&unix.IN_Q_OVERFLOW != 0:
			overflow = true
		case e.wd < 0:
		case e.wd == dirWD:
			if e.mask&selfGone != 0 {
				changes = append(changes, change{rescan: true})
			} else if e.name != "" && !strings.HasPrefix(e.name, ".") {
				p := filepath.Join(w.path, e.name)
				if op := classify(e.mask, p); op != 0 {
					changes = append(changes, change{path: p, op: op, gone: e.mask&(unix.IN_DELETE|unix.IN_MOVED_FROM) != 0})
				}
			}
		case e.wd == parentWD:
			if e.mask&selfGone != 0 {
				changes = append(changes, change{rescan: true})
				break
			}
			if e.name != w.base {
				break
			}
			op := classify(e.mask, w.path)
			// Path itself appeared, went or was replaced (unless it is a
			// file just created and being written: its close is next).
			rescan := e.mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 && op != opWriting
			if op != 0 || rescan {
				changes = append(changes, change{path: w.path, op: op, rescan: rescan})
			}
		}
	}
	if len(changes) == 0 && !overflow {
		return
	}
	w.mu.Lock()
	for _, c := range changes {
		if c.rescan {
			w.pending.rescan = true
		}
		if c.op != 0 {
			w.pending.add(c.path, c.op)
		}
		if c.gone {
			w.pending.remove(c.path)
		}
	}
	if overflow {
		w.pending.overflow = true
	}
	w.mu.Unlock()
	w.signal()
}

func (w *inotifyWatcher) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// classify says what an event on the file at p means; 0 is nothing.
func classify(mask uint32, p string) watchOp {
	switch {
	case mask&(unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_DELETE) != 0:
		return opChanged
	case mask&unix.IN_MODIFY != 0:
		return opWriting
	case mask&unix.IN_CREATE != 0:
		if mask&unix.IN_ISDIR == 0 && justCreated(p) {
			return opWriting
		}
		return opChanged
	case mask&unix.IN_ATTRIB != 0:
		return opAttrib
	}
	return 0
}

// justCreated reports whether p is a regular file with one link: created by
// open, so its writer's close is to come. A symbolic link, or a hard link to
// an existing file, is complete when it appears.
func justCreated(p string) bool {
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && s.Nlink == 1
}
