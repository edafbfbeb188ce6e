package source_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func manifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

const (
	badYAML        = "apiVersion: v1\nkind: Pod\nmetadata: [\n"
	noName         = "apiVersion: v1\nkind: Pod\nspec:\n  containers: [{name: c, image: i}]\n"
	noContainers   = "apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {}\n"
	dupContainers  = "apiVersion: v1\nkind: Pod\nmetadata: {name: dup}\nspec:\n  containers: [{name: c, image: i}, {name: c, image: j}]\n"
	nodeName       = "node-a"
	defaultTimeout = 10 * time.Second
)

type fileHarness struct {
	t    *testing.T
	dir  string
	clk  *testclock.FakeClock
	out  chan syncloop.PodUpdate
	rec  *eventtest.Recorder
	f    *source.File
	done chan error
}

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// polling makes a File source poll instead of watching: the tests of the
// poll step the fake clock to make it look.
func polling(o *source.FileOptions) { o.DisableWatch = true }

// startFile starts a File source on a directory holding files (name →
// content; a name ending in "/" is a directory), with a fake clock.
func startFile(t *testing.T, files map[string]string, mods ...func(*source.FileOptions)) *fileHarness {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if sub, ok := strings.CutSuffix(name, "/"); ok {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		write(t, filepath.Join(dir, name), data)
	}
	return runFile(t, dir, dir, mods...)
}

// runFile runs a File source on path with a fake clock until the test
// ends; dir is where the test writes.
func runFile(t *testing.T, path, dir string, mods ...func(*source.FileOptions)) *fileHarness {
	t.Helper()
	h := &fileHarness{t: t, dir: dir, clk: testclock.NewFakeClock(t0),
		out: make(chan syncloop.PodUpdate), rec: &eventtest.Recorder{}, done: make(chan error, 1)}
	opts := source.FileOptions{Path: path, NodeName: nodeName, Clock: h.clk, Recorder: h.rec, Out: h.out}
	for _, mod := range mods {
		mod(&opts)
	}
	f, err := source.NewFile(opts)
	require.NoError(t, err)
	h.f = f
	ctx, cancel := context.WithCancel(t.Context())
	go func() { h.done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, receive(t, h.done))
	})
	return h
}

// step waits until the source is parked on its timer, then moves time on.
func (h *fileHarness) step(d time.Duration) {
	h.t.Helper()
	eventually(h.t, "the source waits on the clock", h.clk.HasWaiters)
	h.clk.Step(d)
}

// next receives the next SET and returns its pods' names, sorted.
func (h *fileHarness) next() []string {
	h.t.Helper()
	u := receive(h.t, h.out)
	require.Equal(h.t, syncloop.OpSet, u.Op)
	require.Equal(h.t, syncloop.SourceFile, u.Source)
	return podNames(u.Pods)
}

func podNames(ps []*v1.Pod) []string {
	names := []string{}
	for _, p := range ps {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

func errorFiles(errs map[string]error) []string {
	var out []string
	for p := range errs {
		out = append(out, filepath.Base(p))
	}
	sort.Strings(out)
	return out
}

func TestFileBrokenManifestsDoNotAffectOthers(t *testing.T) {
	h := startFile(t, map[string]string{
		"a.yaml":         manifest("a", "busybox:1"),
		"b.json":         `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		"bad.yaml":       badYAML,
		"noname.yaml":    noName,
		"empty.yaml":     noContainers,
		"dup.yaml":       dupContainers,
		".hidden.yaml":   manifest("hidden", "i"),
		"list.yaml":      "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: l1}\n  spec: {containers: [{name: c, image: i}]}\n",
		"zz-notpod.yaml": "apiVersion: v1\nkind: ConfigMap\n",
		"sub/":           "",
		"sub/s.yaml":     manifest("sub", "i"),
	})

	assert.Equal(t, []string{"a-node-a", "b-node-a", "l1-node-a"}, h.next())
	errs := h.f.Errors()
	assert.Equal(t, []string{"bad.yaml", "dup.yaml", "empty.yaml", "noname.yaml", "zz-notpod.yaml"}, errorFiles(errs))
	for p, err := range errs {
		assert.Contains(t, err.Error(), "manifest "+p+": ", "the error names the file")
	}
	assert.ErrorIs(t, errs[filepath.Join(h.dir, "bad.yaml")], source.ErrInvalidManifest)
	assert.ErrorIs(t, errs[filepath.Join(h.dir, "dup.yaml")], validation.ErrInvalidPod)
	assert.Contains(t, errs[filepath.Join(h.dir, "dup.yaml")].Error(), `Duplicate value: "c"`)
	assert.Contains(t, errs[filepath.Join(h.dir, "empty.yaml")].Error(), "spec.containers: Required value")
	assert.Contains(t, errs[filepath.Join(h.dir, "noname.yaml")].Error(), "metadata.name: Required value")

	events := h.rec.Events()
	require.Len(t, events, 5)
	for _, e := range events {
		assert.Equal(t, "Warning", e.Type)
		assert.Equal(t, source.ReasonFailedValidation, e.Reason)
		assert.Contains(t, e.Message, h.dir)
		assert.Equal(t, &v1.ObjectReference{Kind: "Node", Name: nodeName, UID: nodeName}, e.Object)
	}

	// Every period, everything is read again; the broken files are not
	// reported again while their errors stay the same.
	h.step(source.DefaultPeriod)
	assert.Equal(t, []string{"a-node-a", "b-node-a", "l1-node-a"}, h.next())
	assert.Len(t, h.rec.Events(), 5)
}

// The report: a manifest with a negative periodSeconds is refused,
// and the file and the field are named in Errors() and in the event.
func TestFileRefusesAnInvalidProbeNamingFileAndField(t *testing.T) {
	probe := "apiVersion: v1\nkind: Pod\nmetadata: {name: live}\nspec:\n  containers:\n  - name: c\n    image: i\n" +
		"    livenessProbe: {exec: {command: [\"true\"]}, periodSeconds: -1}\n"
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i"), "live.yaml": probe})
	assert.Equal(t, []string{"a-node-a"}, h.next())
	p := filepath.Join(h.dir, "live.yaml")
	want := "manifest " + p + ": invalid pod default/live-node-a: " +
		"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"
	err := h.f.Errors()[p]
	require.Error(t, err)
	assert.ErrorIs(t, err, validation.ErrInvalidPod)
	assert.Equal(t, want, err.Error())
	require.Len(t, h.rec.Events(), 1)
	assert.Equal(t, "Warning FailedValidation Error reading static pod "+want, h.rec.Events()[0].String())
}

func TestFileBecomesValidLater(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i"), "b.yaml": badYAML}, polling)
	assert.Equal(t, []string{"a-node-a"}, h.next())
	assert.Equal(t, []string{"b.yaml"}, errorFiles(h.f.Errors()))

	write(t, filepath.Join(h.dir, "b.yaml"), manifest("b", "i"))
	h.step(source.DefaultPollInterval)
	assert.Equal(t, []string{"a-node-a", "b-node-a"}, h.next(), "picked up by the poll, before the period")
	assert.Empty(t, h.f.Errors())
}

func TestFilePollSeesChanges(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i")}, polling)
	require.Equal(t, []string{"a-node-a"}, h.next())

	// Nothing changed: polls send nothing.
	for range 3 {
		h.step(source.DefaultPollInterval)
	}
	eventually(t, "the source waits again", h.clk.HasWaiters)
	nothing(t, h.out)

	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"a file added", func() { write(t, filepath.Join(h.dir, "b.yaml"), manifest("b", "i")) }, []string{"a-node-a", "b-node-a"}},
		{"a file changed", func() { write(t, filepath.Join(h.dir, "b.yaml"), manifest("b", "busybox:1.37")) }, []string{"a-node-a", "b-node-a"}},
		{"a file removed", func() { require.NoError(t, os.Remove(filepath.Join(h.dir, "a.yaml"))) }, []string{"b-node-a"}},
		{"a hidden file added", nil, nil},
		{"a file renamed to hidden", func() {
			require.NoError(t, os.Rename(filepath.Join(h.dir, "b.yaml"), filepath.Join(h.dir, ".b.yaml")))
		}, []string{}},
	}
	for _, s := range steps {
		if s.change == nil {
			write(t, filepath.Join(h.dir, ".x.yaml"), manifest("x", "i"))
			h.step(source.DefaultPollInterval)
			eventually(t, "the source waits again", h.clk.HasWaiters)
			nothing(t, h.out)
			continue
		}
		s.change()
		h.step(source.DefaultPollInterval)
		assert.Equal(t, s.want, h.next(), s.name)
	}
}

func TestFileUIDChangesWithContent(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i:1")}, polling)
	first := receive(t, h.out).Pods[0]
	write(t, filepath.Join(h.dir, "a.yaml"), manifest("a", "i:22"))
	h.step(source.DefaultPollInterval)
	second := receive(t, h.out).Pods[0]
	assert.Equal(t, first.Name, second.Name)
	assert.NotEqual(t, first.UID, second.UID)
	write(t, filepath.Join(h.dir, "a.yaml"), manifest("a", "i:1"))
	h.step(source.DefaultPollInterval)
	assert.Equal(t, first.UID, receive(t, h.out).Pods[0].UID, "the same content again: the same UID")
}

func TestFilePeriodWithoutPolling(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i")}, polling, func(o *source.FileOptions) {
		o.PollInterval = -1
		o.Period = 5 * time.Second
	})
	require.Equal(t, []string{"a-node-a"}, h.next())
	write(t, filepath.Join(h.dir, "b.yaml"), manifest("b", "i"))
	h.step(4 * time.Second)
	eventually(t, "the source waits again", h.clk.HasWaiters)
	nothing(t, h.out)
	h.step(time.Second)
	assert.Equal(t, []string{"a-node-a", "b-node-a"}, h.next())
	h.step(5 * time.Second)
	assert.Equal(t, []string{"a-node-a", "b-node-a"}, h.next(), "a SET every period, changed or not")
}

func TestFileKeepLastGood(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "upstream: the pod goes", true: "KeepLastGood: the pod stays"}[keep], func(t *testing.T) {
			h := startFile(t, map[string]string{"a.yaml": manifest("a", "i"), "b.yaml": manifest("b", "i")},
				polling, func(o *source.FileOptions) { o.KeepLastGood = keep })
			require.Equal(t, []string{"a-node-a", "b-node-a"}, h.next())
			write(t, filepath.Join(h.dir, "b.yaml"), badYAML)
			h.step(source.DefaultPollInterval)
			if keep {
				assert.Equal(t, []string{"a-node-a", "b-node-a"}, h.next())
			} else {
				assert.Equal(t, []string{"a-node-a"}, h.next())
			}
			assert.Equal(t, []string{"b.yaml"}, errorFiles(h.f.Errors()))
			require.NoError(t, os.Remove(filepath.Join(h.dir, "b.yaml")))
			h.step(source.DefaultPollInterval)
			assert.Equal(t, []string{"a-node-a"}, h.next(), "a deleted file's pods go")
			assert.Empty(t, h.f.Errors())
		})
	}
}

func TestFileMissingPathSendsEmptySet(t *testing.T) {
	clk := testclock.NewFakeClock(t0)
	out := make(chan syncloop.PodUpdate)
	dir := filepath.Join(t.TempDir(), "manifests")
	f, err := source.NewFile(source.FileOptions{Path: dir, NodeName: nodeName, Clock: clk, Out: out, DisableWatch: true})
	require.NoError(t, err)
	ps, err := f.Read()
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, []*v1.Pod{}, ps)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	u := receive(t, out)
	assert.Equal(t, syncloop.OpSet, u.Op)
	assert.Empty(t, u.Pods, "an empty SET: the source counts as seen")

	require.NoError(t, os.Mkdir(dir, 0o755))
	write(t, filepath.Join(dir, "a.yaml"), manifest("a", "i"))
	eventually(t, "the source waits", clk.HasWaiters)
	clk.Step(time.Second)
	assert.Equal(t, []string{"a-node-a"}, podNames(receive(t, out).Pods), "the directory appearing is a change")
	cancel()
	assert.NoError(t, receive(t, done))
}

func TestFileSingleFilePath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pod.yaml")
	write(t, p, manifest("solo", "i"))
	f, err := source.NewFile(source.FileOptions{Path: p, NodeName: nodeName, Out: make(chan syncloop.PodUpdate)})
	require.NoError(t, err)
	ps, err := f.Read()
	require.NoError(t, err)
	assert.Equal(t, []string{"solo-node-a"}, podNames(ps))
	want, err := source.ReadManifest([]byte(manifest("solo", "i")), syncloop.SourceFile, p, nodeName)
	require.NoError(t, err)
	assert.Equal(t, want[0].UID, ps[0].UID, "the file's path is hashed into the UID")
}

func TestNewFileOptions(t *testing.T) {
	out := make(chan syncloop.PodUpdate)
	cases := []struct {
		name string
		opts source.FileOptions
		msg  string
	}{
		{"no path", source.FileOptions{NodeName: "n", Out: out}, "path is required"},
		{"no node", source.FileOptions{Path: "/x", Out: out}, "node name is required"},
		{"no out", source.FileOptions{Path: "/x", NodeName: "n"}, "out channel is required"},
		{"negative period", source.FileOptions{Path: "/x", NodeName: "n", Out: out, Period: -time.Second}, "period -1s is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := source.NewFile(tc.opts)
			require.Error(t, err)
			assert.True(t, errors.Is(err, source.ErrInvalidOptions))
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestFilePollRereadsOnlyChangedFiles(t *testing.T) {
	h := startFile(t, map[string]string{"a.yaml": manifest("a", "i:1"), "b.yaml": manifest("b", "i:1")}, polling, func(o *source.FileOptions) {
		o.Period = 10 * time.Second
	})
	first := receive(t, h.out).Pods
	require.Len(t, first, 2)

	write(t, filepath.Join(h.dir, "b.yaml"), manifest("b", "i:22"))
	h.step(time.Second)
	second := receive(t, h.out).Pods
	require.Len(t, second, 2)
	assert.Same(t, first[0], second[0], "a.yaml was not read again")
	assert.NotEqual(t, first[1].UID, second[1].UID, "b.yaml was")

	// A rewrite that keeps the size and the modification time escapes the
	// poll; the periodic full read catches it.
	b := filepath.Join(h.dir, "b.yaml")
	st, err := os.Stat(b)
	require.NoError(t, err)
	write(t, b, manifest("b", "i:33"))
	require.NoError(t, os.Chtimes(b, st.ModTime(), st.ModTime()))
	for range 8 {
		h.step(time.Second)
	}
	eventually(t, "the source waits again", h.clk.HasWaiters)
	nothing(t, h.out)
	h.step(time.Second) // 10s since the last full read
	third := receive(t, h.out).Pods
	require.Len(t, third, 2)
	assert.NotSame(t, first[0], third[0], "a full read reads every file")
	assert.Equal(t, first[0].UID, third[0].UID)
	assert.Equal(t, "i:33", third[1].Spec.Containers[0].Image)
}
