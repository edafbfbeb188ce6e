package volume_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/volumetest"
)

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

type harness struct {
	t      *testing.T
	m      *volume.Manager
	clk    *clocktesting.FakeClock
	root   string
	src    *volume.StaticSources
	mnt    *volumetest.Mounter
	rec    *eventtest.Recorder
	tokens *volumetest.Tokens
	cancel context.CancelFunc
	done   chan error
}

// newHarness builds a Manager on a fake clock, fake mounter and static
// sources; run starts it.
func newHarness(t *testing.T, mutate func(*volume.Options)) *harness {
	t.Helper()
	h := &harness{
		t:    t,
		clk:  clocktesting.NewFakeClock(t0),
		root: t.TempDir(),
		src:  &volume.StaticSources{},
		mnt:  &volumetest.Mounter{},
		rec:  &eventtest.Recorder{},
	}
	h.tokens = &volumetest.Tokens{Now: h.clk.Now}
	opts := volume.Options{
		RootDir:  h.root,
		Sources:  volume.Sources{ConfigMaps: h.src, Secrets: h.src, Tokens: h.tokens},
		Mounter:  h.mnt,
		Clock:    h.clk,
		Recorder: h.rec,
		NodeName: "node-1",
	}
	if mutate != nil {
		mutate(&opts)
	}
	m, err := volume.New(opts)
	require.NoError(t, err)
	h.m = m
	return h
}

// run starts the manager's Run and stops it at cleanup.
func (h *harness) run() *harness {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.m.Run(ctx) }()
	h.t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	require.NoError(h.t, <-h.done)
	h.cancel = nil
}

// mount calls WaitForMount with a real-time bound, so a test that breaks
// fails instead of hanging.
func (h *harness) mount(pod *v1.Pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.m.WaitForMount(ctx, pod)
}

// failMount calls WaitForMount for a pod whose setup fails: it waits for
// the FailedMount event, then for WaitForMount to park on its timer, steps
// the fake clock past MountTimeout and returns WaitForMount's error.
func (h *harness) failMount(pod *v1.Pod) error {
	h.t.Helper()
	n := len(h.rec.Events())
	res := make(chan error, 1)
	go func() { res <- h.mount(pod) }()
	waitFor(h.t, "a FailedMount event", func() bool { return len(h.rec.Events()) > n })
	waitFor(h.t, "WaitForMount to wait on the clock", func() bool { return h.clk.Waiters() >= 2 })
	waitFor(h.t, "the operations in flight to end", func() bool { return volume.Busy(h.m) == 0 })
	h.clk.Step(volume.DefaultMountTimeout)
	return <-res
}

// mountAfterBackoff calls WaitForMount for a pod whose volumes failed
// before and should now succeed: once WaitForMount waits on the clock, it
// steps the clock by d (past the retry backoff, short of MountTimeout).
func (h *harness) mountAfterBackoff(pod *v1.Pod, d time.Duration) error {
	h.t.Helper()
	res := make(chan error, 1)
	go func() { res <- h.mount(pod) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-res:
			return err
		default:
		}
		if h.clk.Waiters() >= 2 && volume.Busy(h.m) == 0 {
			h.clk.Step(d)
			return <-res
		}
		if time.Now().After(deadline) {
			h.t.Fatal("WaitForMount neither returned nor waited")
		}
		runtime.Gosched()
	}
}

func (h *harness) unmount(pod *v1.Pod) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.m.WaitForUnmount(ctx, pod)
}

func (h *harness) volDir(pod *v1.Pod, plugin, name string) string {
	return volume.VolumeDir(h.root, pod.UID, plugin, name)
}

// waitFor waits until cond holds, failing after a real-time deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

func newPod(name string, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			Volumes:    vols,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}},
		},
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// listFiles returns the files of a content volume, path → content, read
// through the user-visible symlinks.
func listFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	data := filepath.Join(dir, "..data") + "/"
	out := map[string]string{}
	err := filepath.WalkDir(data, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(data, p)
		out[rel] = readFile(t, filepath.Join(dir, rel))
		return nil
	})
	require.NoError(t, err)
	return out
}

func ptr[T any](v T) *T { return &v }
