//go:build linux

package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// These tests change a real directory and wait for the SET that inotify
// brings, with a deadline; the clock is fake and never stepped, so no
// periodic read or poll can be what sent it.

// atomicWrite writes data to a hidden temporary file and renames it over
// path, as editors and configuration tools do.
func atomicWrite(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	write(t, tmp, data)
	require.NoError(t, os.Rename(tmp, path))
}

// until receives SETs until one has the wanted pod names, and returns how
// many it received.
func (h *fileHarness) until(want ...string) int {
	h.t.Helper()
	if want == nil {
		want = []string{}
	}
	deadline := time.After(defaultTimeout)
	for n := 1; ; n++ {
		select {
		case u := <-h.out:
			if slices.Equal(podNames(u.Pods), want) {
				return n
			}
		case <-deadline:
			h.t.Fatalf("no SET with pods %v within %v", want, defaultTimeout)
		}
	}
}

func TestFileWatchSeesChangesAtOnce(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i:1")})
	first := receive(t, h.out).Pods
	require.Equal(t, []string{"a-node-a"}, podNames(first))
	uid := func(ps []*v1.Pod, name string) string {
		for _, p := range ps {
			if p.Name == name {
				return string(p.UID)
			}
		}
		return ""
	}
	lastA := uid(first, "a-node-a")
	path := func(name string) string { return filepath.Join(h.dir, name) }

	// Each step's change must bring exactly the next SET: a change that
	// should send nothing (a hidden file, a subdirectory) is followed by one
	// that does, and the SET received must be the latter's.
	steps := []struct {
		name    string
		change  func()
		want    []string
		aNewUID bool
	}{
		{"a file created", func() { write(t, path("b.yaml"), manifest("b", "i")) }, []string{"a-node-a", "b-node-a"}, false},
		{"a file rewritten in place", func() { write(t, path("a.yaml"), manifest("a", "i:2")) }, []string{"a-node-a", "b-node-a"}, true},
		{"a file replaced by a rename", func() { atomicWrite(t, path("a.yaml"), manifest("a", "i:3")) }, []string{"a-node-a", "b-node-a"}, true},
		{"a file removed", func() { require.NoError(t, os.Remove(path("b.yaml"))) }, []string{"a-node-a"}, false},
		{"a hidden file and a subdirectory, then a file", func() {
			write(t, path(".hidden.yaml"), manifest("hidden", "i"))
			require.NoError(t, os.Mkdir(path("sub"), 0o755))
			write(t, path("sub/s.yaml"), manifest("s", "i"))
			write(t, path("c.yaml"), manifest("c", "i"))
		}, []string{"a-node-a", "c-node-a"}, false},
		{"a file renamed to a hidden name", func() {
			require.NoError(t, os.Rename(path("c.yaml"), path(".c.yaml")))
		}, []string{"a-node-a"}, false},
		{"a symbolic link to a manifest elsewhere", func() {
			other := filepath.Join(t.TempDir(), "d.yaml")
			write(t, other, manifest("d", "i"))
			require.NoError(t, os.Symlink(other, path("d.yaml")))
		}, []string{"a-node-a", "d-node-a"}, false},
		{"a manifest's mode changed", func() { require.NoError(t, os.Chmod(path("a.yaml"), 0o600)) }, []string{"a-node-a", "d-node-a"}, false},
		{"a broken manifest", func() { write(t, path("e.yaml"), badYAML) }, []string{"a-node-a", "d-node-a"}, false},
	}
	for _, s := range steps {
		s.change()
		got := receive(t, h.out).Pods
		require.Equal(t, s.want, podNames(got), s.name)
		if a := uid(got, "a-node-a"); s.aNewUID {
			assert.NotEqual(t, lastA, a, "%s: a.yaml was read again", s.name)
			lastA = a
		} else {
			assert.Equal(t, lastA, a, "%s: a.yaml is unchanged", s.name)
		}
	}
	assert.Equal(t, []string{"e.yaml"}, errorFiles(h.f.Errors()))
}

func TestFileWatchBrokenManifestBecomesValid(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepLastGood=%v", keep), func(t *testing.T) {
			h := startFile(t, map[string]string{"a.yaml": manifest("a", "i")}, func(o *source.FileOptions) { o.KeepLastGood = keep })
			require.Equal(t, []string{"a-node-a"}, h.next())
			p := filepath.Join(h.dir, "a.yaml")
			write(t, p, badYAML)
			if keep {
				assert.Equal(t, []string{"a-node-a"}, h.next())
			} else {
				assert.Equal(t, []string{}, h.next())
			}
			assert.Equal(t, []string{"a.yaml"}, errorFiles(h.f.Errors()))
			require.Len(t, h.rec.Events(), 1)
			assert.Contains(t, h.rec.Events()[0].Message, p)
			write(t, p, manifest("a", "i:2"))
			assert.Equal(t, []string{"a-node-a"}, h.next())
			assert.Empty(t, h.f.Errors())
		})
	}
}

// A manifest is not read while it is being written: a half-written file
// makes no error and no SET; its close makes the read.
func TestFileWatchWaitsForTheWriterToClose(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i")})
	require.Equal(t, []string{"a-node-a"}, h.next())
	fh, err := os.Create(filepath.Join(h.dir, "b.yaml"))
	require.NoError(t, err)
	full := manifest("b", "i")
	_, err = fh.WriteString(full[:len(full)/2])
	require.NoError(t, err)
	// Ordered after the half write: if it had made a SET, that SET would
	// come first.
	write(t, filepath.Join(h.dir, "c.yaml"), manifest("c", "i"))
	assert.Equal(t, []string{"a-node-a", "c-node-a"}, h.next(), "b.yaml, half written, is not read")
	_, err = fh.WriteString(full[len(full)/2:])
	require.NoError(t, err)
	require.NoError(t, fh.Close())
	assert.Equal(t, []string{"a-node-a", "b-node-a", "c-node-a"}, h.next())
	assert.Empty(t, h.f.Errors(), "never reported broken")
	assert.Empty(t, h.rec.Events())
}

func TestFileWatchManyFilesAtOnce(t *testing.T) {
	h := startFile(t, nil)
	require.Equal(t, []string{}, h.next())
	want := []string{}
	for i := range 100 {
		write(t, filepath.Join(h.dir, fmt.Sprintf("pod-%03d.yaml", i)), manifest(fmt.Sprintf("pod-%03d", i), "i"))
		want = append(want, fmt.Sprintf("pod-%03d-node-a", i))
	}
	sets := h.until(want...)
	t.Logf("100 files written at once: %d SETs", sets)
	assert.LessOrEqual(t, sets, 10, "a burst is read in a few batches, not file by file")
	assert.Empty(t, h.f.Errors())
}

func TestFileWatchDirectoryCreatedLater(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := runFile(t, dir, dir)
	assert.Equal(t, []string{}, h.next(), "a missing directory: an empty SET")

	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "i"))
	h.until("a-node-a")

	// Removed, recreated: watched again.
	require.NoError(t, os.RemoveAll(dir))
	h.until()
	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(dir, "b.yaml"), manifest("b", "i"))
	h.until("b-node-a")

	// Renamed away and replaced by another directory: the new one is
	// watched, the old one no longer.
	old := dir + ".old"
	require.NoError(t, os.Rename(dir, old))
	h.until()
	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(old, "x.yaml"), manifest("x", "i"))
	write(t, filepath.Join(dir, "c.yaml"), manifest("c", "i"))
	h.until("c-node-a")
}

func TestFileWatchSingleFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pod.yaml")
	write(t, p, manifest("solo", "i:1"))
	write(t, filepath.Join(dir, "other.yaml"), manifest("other", "i"))
	h := runFile(t, p, dir)
	out := h.out
	first := receive(t, out).Pods
	require.Equal(t, []string{"solo-node-a"}, podNames(first))

	write(t, filepath.Join(dir, "another.yaml"), manifest("another", "i")) // not Path: nothing
	atomicWrite(t, p, manifest("solo", "i:2"))
	second := receive(t, out).Pods
	require.Equal(t, []string{"solo-node-a"}, podNames(second))
	assert.NotEqual(t, first[0].UID, second[0].UID)

	require.NoError(t, os.Remove(p))
	assert.Equal(t, []string{}, h.next())
	write(t, p, manifest("solo", "i:1"))
	third := receive(t, out).Pods
	require.Equal(t, []string{"solo-node-a"}, podNames(third))
	assert.Equal(t, first[0].UID, third[0].UID)
}

// Run returns when its context ends, with the watch closed (TestMain's
// goleak checks that its goroutine is gone), even while a SET waits for its
// receiver.
func TestFileWatchStopsWithContext(t *testing.T) {
	dir := t.TempDir()
	out := make(chan syncloop.PodUpdate)
	f, err := source.NewFile(source.FileOptions{Path: dir, NodeName: nodeName, Out: out})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	receive(t, out)
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "i")) // its SET is never received
	cancel()
	assert.NoError(t, receive(t, done))
}

// BenchmarkWatchLatency is the time from writing a manifest (a rewrite in
// place, which changes its pod's UID) to the SET that carries it, on the
// real clock: the inotify event, the read of that one file and the send.
// The other files of the directory are not read (nor listed).
func BenchmarkWatchLatency(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod-%d.yaml", i)), []byte(benchManifest(i, "app:1")), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			out := make(chan syncloop.PodUpdate)
			f, err := source.NewFile(source.FileOptions{Path: dir, NodeName: "node-1", Out: out})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			defer func() { cancel(); <-done }()
			<-out
			images := [2]string{"app:2", "app:3"}
			p := filepath.Join(dir, "pod-0.yaml")
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if err := os.WriteFile(p, []byte(benchManifest(0, images[i%2])), 0o644); err != nil {
					b.Fatal(err)
				}
				i++
				if u := <-out; len(u.Pods) != n {
					b.Fatalf("SET of %d pods, want %d", len(u.Pods), n)
				}
			}
		})
	}
}

// A manifest removed and written again at once (rm and cp, as upstream's
// mirror pod e2e test does) comes as its pods' removal, then their return:
// the two events do not cancel out, even when they arrive in one batch
// while the source is busy sending.
func TestFileWatchRemovedAndRecreated(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i:1")})
	require.Equal(t, []string{"a-node-a"}, podNames(receive(t, h.out).Pods))
	path := func(name string) string { return filepath.Join(h.dir, name) }
	for i := range 3 {
		// The source is busy: the SET for b.yaml waits for the test to
		// take it, while a.yaml goes and comes back.
		write(t, path(fmt.Sprintf("b%d.yaml", i)), manifest(fmt.Sprintf("b%d", i), "i"))
		require.NoError(t, os.Remove(path("a.yaml")))
		write(t, path("a.yaml"), manifest("a", "i:1"))
		var sets [][]string
		deadline := time.After(defaultTimeout)
		for !slices.Contains(lastOf(sets), "a-node-a") || len(sets) < 2 {
			select {
			case u := <-h.out:
				sets = append(sets, podNames(u.Pods))
			case <-deadline:
				t.Fatalf("round %d: SETs %v, want a-node-a gone, then back", i, sets)
			}
		}
		gone := slices.IndexFunc(sets, func(s []string) bool { return !slices.Contains(s, "a-node-a") })
		assert.GreaterOrEqual(t, gone, 0, "round %d: SETs %v: a-node-a never left", i, sets)
	}
}

func lastOf(sets [][]string) []string {
	if len(sets) == 0 {
		return nil
	}
	return sets[len(sets)-1]
}
