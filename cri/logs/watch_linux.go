//go:build linux

package logs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// watchMask is what wakes a follower in the log file's directory: a file
// written, created, renamed in or out, removed, or changed in attributes.
// Reads are left out, so the follower's own reads wake nothing.
const watchMask = unix.IN_MODIFY | unix.IN_CREATE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// inotifyWatcher is an inotify instance with a watch on one directory and
// a goroutine that turns its events into wake-ups. The events themselves
// are not looked at: the follower looks at the files.
type inotifyWatcher struct {
	file    *os.File // the inotify fd, pollable: Close wakes the blocked Read
	changed chan struct{}
	done    chan struct{}
}

// newWatcher watches dir with inotify. It fails when the kernel gives no
// inotify instance (fs.inotify.max_user_instances is 128 by default) or
// the directory cannot be watched; the follower then polls.
func newWatcher(dir string) (watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, watchMask); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("watch directory %q: %w", dir, err)
	}
	w := &inotifyWatcher{
		file:    os.NewFile(uintptr(fd), "inotify"),
		changed: make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	go w.run()
	return w, nil
}

func (w *inotifyWatcher) Changed() <-chan struct{} { return w.changed }

func (w *inotifyWatcher) Close() error {
	err := w.file.Close()
	<-w.done
	return err
}

// run reads events until the file is closed (or the read fails: the
// follower then only has its timer, which is polling).
func (w *inotifyWatcher) run() {
	defer close(w.done)
	buf := make([]byte, 4096)
	for {
		if _, err := w.file.Read(buf); err != nil {
			return
		}
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}
