package logs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

const (
	// StatusCheckPeriod is how long a follower waits without news before
	// it asks the runtime whether the container still runs (upstream's
	// logForceCheckPeriod). While lines keep coming it asks at most this
	// often.
	StatusCheckPeriod = time.Second
	// pollPeriod is how often a follower without inotify looks at the
	// file.
	pollPeriod = 250 * time.Millisecond
)

// ErrContainerStatusNil is a runtime's answer to ContainerStatus without a
// status, as upstream's CRI client reports it.
var ErrContainerStatusNil = errors.New("container status is nil")

// watcher wakes a follower when something changes in the log file's
// directory.
type watcher interface {
	// Changed receives a value after a change; changes coalesce.
	Changed() <-chan struct{}
	// Close stops watching; it returns after the watcher's goroutine ended.
	Close() error
}

// followAction is what the reader does after a follower's look at the end
// of the file.
type followAction int

const (
	// followRead: read the current file again.
	followRead followAction = iota
	// followSwitch: the file at the path replaced the current one (log
	// rotation), whose end has been read: go on with the new one.
	followSwitch
	// followDone: the container no longer runs and its log is read.
	followDone
)

// follower decides, each time the reader reaches the end of the file,
// whether to read again, to go on with a new file at the path, or to stop;
// in between it waits for a change in the directory or for its timer.
//
// Rotation renames the file and the runtime opens a new one at the path
// (ReopenContainerLog), writing to the old one until then. The follower
// opens the new file as soon as it sees it, keeps reading the old one, and
// switches once the new one has data (the runtime writes there now, so
// the old one is complete) and the old one has been read to its end once
// more; or once the container stopped. A file renamed away and replaced
// twice before the follower looks loses the middle file, which it never
// saw.
type follower struct {
	path  string // resolved
	id    string
	rt    ContainerStatuser
	clock clock.Clock
	log   *slog.Logger

	cur        os.FileInfo // of the file being read
	watch      watcher
	watchTried bool
	next       *os.File // the file that replaced cur at the path, if any
	nextInfo   os.FileInfo
	nextReady  bool // next has data: read cur to its end once more, then switch
	checked    time.Time
	hasChecked bool
	exited     bool // the container no longer runs: read to the end and stop
}

func newFollower(path, id string, rt ContainerStatuser, clk clock.Clock, log *slog.Logger, cur os.FileInfo) *follower {
	return &follower{path: path, id: id, rt: rt, clock: clk, log: log, cur: cur}
}

func (fw *follower) close() {
	if fw.watch != nil {
		_ = fw.watch.Close()
	}
	if fw.next != nil {
		_ = fw.next.Close()
	}
}

// takeNext hands the new file over to the reader.
func (fw *follower) takeNext() *os.File {
	f := fw.next
	fw.cur, fw.next, fw.nextInfo, fw.nextReady = fw.nextInfo, nil, nil, false
	return f
}

// atEOF is called when the reader is at the end of the current file.
func (fw *follower) atEOF(ctx context.Context) (followAction, error) {
	if fw.next != nil {
		if fw.nextReady || fw.exited {
			return followSwitch, nil
		}
		if st, err := fw.next.Stat(); err == nil && st.Size() > 0 {
			fw.nextReady = true
			return followRead, nil
		}
	}
	if fw.exited {
		if fw.next == nil && fw.lookForNewFile() {
			return followRead, nil
		}
		return followDone, nil
	}
	if !fw.watchTried {
		fw.watchTried = true
		dir := filepath.Dir(fw.path)
		w, err := newWatcher(dir)
		if err != nil {
			fw.log.Debug("Watching the log directory failed, polling it", "dir", dir, "err", err)
		} else {
			fw.watch = w
		}
		// A write may have come before the watch: read again first.
		return followRead, nil
	}
	if fw.next == nil && fw.lookForNewFile() {
		return followRead, nil
	}
	if now := fw.clock.Now(); !fw.hasChecked || now.Sub(fw.checked) >= StatusCheckPeriod {
		fw.hasChecked, fw.checked = true, now
		running, err := fw.running(ctx)
		if err != nil {
			return 0, err
		}
		if !running {
			fw.exited = true
			return followRead, nil
		}
	}
	return followRead, fw.wait(ctx)
}

// lookForNewFile opens the file at the path when it is not the one being
// read, and reports whether it did.
func (fw *follower) lookForNewFile() bool {
	st, err := os.Stat(fw.path)
	if err != nil || os.SameFile(st, fw.cur) {
		return false
	}
	f, err := os.Open(fw.path)
	if err != nil {
		return false // gone again: the next look finds what replaces it
	}
	st, err = f.Stat()
	if err != nil || os.SameFile(st, fw.cur) {
		_ = f.Close()
		return false
	}
	fw.next, fw.nextInfo = f, st
	return true
}

// running asks the runtime whether the container still runs. A runtime
// that cannot be reached is taken to keep it running, as upstream does:
// containers outlive their runtime's restarts.
func (fw *follower) running(ctx context.Context) (bool, error) {
	resp, err := fw.rt.ContainerStatus(ctx, fw.id, false)
	if err != nil {
		if errors.Is(err, cri.ErrUnavailable) {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, fmt.Errorf("follow log of container %q: %w", fw.id, err)
	}
	st := resp.GetStatus()
	if st == nil {
		return false, fmt.Errorf("follow log of container %q: %w", fw.id, ErrContainerStatusNil)
	}
	return st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
}

// wait returns after a change in the directory, after StatusCheckPeriod
// (pollPeriod without a watcher), or when ctx ends (with its error).
func (fw *follower) wait(ctx context.Context) error {
	period := pollPeriod
	var changed <-chan struct{}
	if fw.watch != nil {
		period, changed = StatusCheckPeriod, fw.watch.Changed()
	}
	t := fw.clock.NewTimer(period)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	case <-t.C():
	}
	return nil
}
