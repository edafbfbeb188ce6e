package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// fakeWatcher is a watcher the test feeds: what the source does with a
// batch, and when, is then all on the clock.
type fakeWatcher struct {
	ready chan struct{}

	mu      sync.Mutex
	pending watchBatch
	armOK   bool
	armErr  error
	arms    int
	closed  bool
}

func newFakeWatcher() *fakeWatcher { return &fakeWatcher{ready: make(chan struct{}, 1), armOK: true} }

func (w *fakeWatcher) Ready() <-chan struct{} { return w.ready }

func (w *fakeWatcher) Take() watchBatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.pending
	w.pending = watchBatch{}
	return b
}

func (w *fakeWatcher) Arm() (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.arms++
	return w.armOK, w.armErr
}

func (w *fakeWatcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return nil
}

func (w *fakeWatcher) setArm(ok bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armOK, w.armErr = ok, err
}

// send adds changes to the pending batch, as the inotify goroutine does.
func (w *fakeWatcher) send(f func(b *watchBatch)) {
	w.mu.Lock()
	f(&w.pending)
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

func (w *fakeWatcher) op(p string, op watchOp) { w.send(func(b *watchBatch) { b.add(p, op) }) }

var _ watcher = (*fakeWatcher)(nil)

func testManifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {containers: [{name: c, image: " + image + "}]}\n"
}

// watchHarness runs a File source in a synctest bubble on a real directory
// with a fakeWatcher (nil: newWatcher fails) and the bubble's clock.
type watchHarness struct {
	t   *testing.T
	dir string
	w   *fakeWatcher
	f   *File
	out chan syncloop.PodUpdate
}

func startWatch(t *testing.T, w *fakeWatcher, files map[string]string, mods ...func(*FileOptions)) *watchHarness {
	t.Helper()
	h := &watchHarness{t: t, dir: t.TempDir(), w: w, out: make(chan syncloop.PodUpdate)}
	for name, data := range files {
		h.write(name, data)
	}
	opts := FileOptions{Path: h.dir, NodeName: "n", Out: h.out}
	for _, mod := range mods {
		mod(&opts)
	}
	f, err := NewFile(opts)
	require.NoError(t, err)
	f.newWatcher = func(string) (watcher, error) {
		if w == nil {
			return nil, errors.New("no inotify here")
		}
		return w, nil
	}
	h.f = f
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		if w != nil {
			assert.True(t, w.closed, "Run closes its watcher")
		}
	})
	return h
}

func (h *watchHarness) write(name, data string) {
	h.t.Helper()
	require.NoError(h.t, os.WriteFile(filepath.Join(h.dir, name), []byte(data), 0o644))
}

func (h *watchHarness) path(name string) string { return filepath.Join(h.dir, name) }

// next receives the next SET and returns its pods' names and how long after
// the call it came, in the bubble's time.
func (h *watchHarness) next() ([]string, time.Duration) {
	h.t.Helper()
	start := time.Now()
	u := <-h.out
	var names []string
	for _, p := range u.Pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names, time.Since(start)
}

// nothing asserts that no SET is on its way: every goroutine of the bubble
// is blocked and none is sending.
func (h *watchHarness) nothing() {
	h.t.Helper()
	synctest.Wait()
	select {
	case u := <-h.out:
		h.t.Fatalf("unexpected SET with %d pods", len(u.Pods))
	default:
	}
}

func TestWatchedManifestBeingWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newFakeWatcher()
		h := startWatch(t, w, map[string]string{"a.yaml": testManifest("a", "i")})
		names, _ := h.next()
		require.Equal(t, []string{"a-n"}, names)

		// Created and being written: not read until its writer closes it.
		h.write("b.yaml", testManifest("b", "i"))
		w.op(h.path("b.yaml"), opWriting)
		h.nothing()
		time.Sleep(300 * time.Millisecond)
		w.op(h.path("b.yaml"), opAttrib) // a chmod while writing: still being written
		h.nothing()
		time.Sleep(200 * time.Millisecond)
		w.op(h.path("b.yaml"), opChanged)
		names, after := h.next()
		assert.Equal(t, []string{"a-n", "b-n"}, names)
		assert.Zero(t, after, "read as soon as it is closed")

		// A writer that keeps it open: read after maxWriteWait anyway.
		h.write("c.yaml", testManifest("c", "i"))
		w.op(h.path("c.yaml"), opWriting)
		names, after = h.next()
		assert.Equal(t, []string{"a-n", "b-n", "c-n"}, names)
		assert.Equal(t, maxWriteWait, after)

		// A directory listing while a manifest is being written (Path
		// itself changed) keeps what it gave before.
		h.write("a.yaml", badYAMLInternal)
		w.op(h.path("a.yaml"), opWriting)
		w.send(func(b *watchBatch) { b.rescan = true })
		names, after = h.next()
		assert.Equal(t, []string{"a-n", "b-n", "c-n"}, names, "a.yaml is not read while being written")
		assert.Zero(t, after)
		assert.Empty(t, h.f.Errors())
	})
}

const badYAMLInternal = "apiVersion: v1\nkind: Pod\nmetadata: [\n"

func TestWatchedAttributesOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newFakeWatcher()
		h := startWatch(t, w, map[string]string{"a.yaml": testManifest("a", "i")})
		h.next()
		w.op(h.path("a.yaml"), opAttrib) // a link count changed: same stat
		h.nothing()
		w.op(h.path("sub"), opChanged) // not a manifest, not known
		h.nothing()
		require.NoError(t, os.Chmod(h.path("a.yaml"), 0o600))
		w.op(h.path("a.yaml"), opAttrib)
		names, _ := h.next()
		assert.Equal(t, []string{"a-n"}, names)
	})
}

func TestWatchOverflowReadsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newFakeWatcher()
		h := startWatch(t, w, map[string]string{"a.yaml": testManifest("a", "i"), "b.yaml": testManifest("b", "i")})
		first := <-h.out
		w.send(func(b *watchBatch) { b.overflow = true })
		second := <-h.out
		require.Len(t, second.Pods, 2)
		assert.NotSame(t, first.Pods[0], second.Pods[0], "every manifest read again")
		assert.NotSame(t, first.Pods[1], second.Pods[1])
		w.mu.Lock()
		assert.Equal(t, 2, w.arms, "armed again")
		w.mu.Unlock()
	})
}

func TestWatchFallsBackToPolling(t *testing.T) {
	t.Run("no watcher", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := startWatch(t, nil, nil)
			h.next()
			h.write("a.yaml", testManifest("a", "i"))
			names, after := h.next()
			assert.Equal(t, []string{"a-n"}, names)
			assert.Equal(t, DefaultPollInterval, after, "seen by the poll")
		})
	})
	t.Run("the watch fails", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newFakeWatcher()
			h := startWatch(t, w, nil)
			h.next()
			w.send(func(b *watchBatch) { b.err = errors.New("read inotify events: EIO") })
			names, _ := h.next()
			assert.Empty(t, names, "a read when the watch ends")
			h.write("a.yaml", testManifest("a", "i"))
			names, after := h.next()
			assert.Equal(t, []string{"a-n"}, names)
			assert.Equal(t, DefaultPollInterval, after)
		})
	})
	t.Run("cannot arm, then can", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newFakeWatcher()
			w.setArm(false, errors.New("watch limit reached"))
			h := startWatch(t, w, nil)
			h.next()
			h.write("a.yaml", testManifest("a", "i"))
			names, after := h.next()
			assert.Equal(t, []string{"a-n"}, names)
			assert.Equal(t, DefaultPollInterval, after, "polled while it cannot arm")

			w.setArm(true, nil)
			h.write("b.yaml", testManifest("b", "i"))
			names, after = h.next()
			assert.Equal(t, []string{"a-n", "b-n"}, names, "armed at the next poll, and read what changed before")
			assert.Equal(t, DefaultPollInterval, after)

			// Watched: no more polls; a change without an event waits for
			// the period.
			h.write("c.yaml", testManifest("c", "i"))
			names, after = h.next()
			assert.Equal(t, []string{"a-n", "b-n", "c-n"}, names)
			assert.Equal(t, DefaultPeriod-2*DefaultPollInterval, after)
		})
	})
	t.Run("cannot arm, no polling: armed again at the period", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newFakeWatcher()
			w.setArm(false, errors.New("no parent"))
			h := startWatch(t, w, nil, func(o *FileOptions) { o.PollInterval = -1 })
			h.next()
			w.setArm(true, nil)
			_, after := h.next()
			assert.Equal(t, DefaultPeriod, after, "the periodic read, after arming")
			h.write("a.yaml", testManifest("a", "i"))
			w.op(h.path("a.yaml"), opChanged)
			names, after := h.next()
			assert.Equal(t, []string{"a-n"}, names)
			assert.Zero(t, after, "watched")
			w.mu.Lock()
			assert.Equal(t, 2, w.arms)
			w.mu.Unlock()
		})
	})
}
