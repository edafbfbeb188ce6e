package imagegc_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/internal/eventtest"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

const pause = "registry.k8s.io/pause:3.10"

// env is a fake runtime holding images, a sandbox to put containers in,
// and a manager over both.
type env struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	rt      *fake.Runtime
	sandbox string
	rec     *eventtest.Recorder
	m       *imagegc.Manager
	// capacity and available are what Fs reports.
	capacity, available atomic.Uint64
}

// newEnv adds images named by their ID ("sha256:<name>") with their sizes
// and returns a manager with policy (zero: the default).
func newEnv(t *testing.T, policy imagegc.Policy, sizes map[string]uint64) *env {
	t.Helper()
	e := &env{t: t, clk: clocktesting.NewFakeClock(t0), rec: &eventtest.Recorder{}}
	e.rt = fake.New(fake.Options{Clock: e.clk})
	t.Cleanup(e.rt.Close)
	for name, size := range sizes {
		require.NoError(t, e.rt.AddImage(&runtimeapi.Image{Id: "sha256:" + name, RepoTags: []string{"example.com/" + name + ":1"}, Size: size}))
	}
	sb, err := e.rt.RunPodSandbox(t.Context(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "uid-p"},
	}, "")
	require.NoError(t, err)
	e.sandbox = sb
	e.capacity.Store(1000)
	e.available.Store(1000)
	e.m, err = imagegc.New(imagegc.Options{
		Runtime: e.rt, Policy: policy, Clock: e.clk, Recorder: e.rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n1"},
		PinnedImages: []string{pause},
		Fs: func(context.Context) (uint64, uint64, error) {
			return e.capacity.Load(), e.available.Load(), nil
		},
	})
	require.NoError(t, err)
	return e
}

// use creates a container of the image named name and returns its ID.
func (e *env) use(name string) string {
	e.t.Helper()
	id, err := e.rt.CreateContainer(e.t.Context(), e.sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "example.com/" + name + ":1"},
	}, nil)
	require.NoError(e.t, err)
	return id
}

func (e *env) drop(containerID string) {
	e.t.Helper()
	require.NoError(e.t, e.rt.RemoveContainer(e.t.Context(), containerID))
}

// images returns the names of the images left, sorted.
func (e *env) images() []string {
	e.t.Helper()
	imgs, err := e.rt.ListImages(e.t.Context(), nil)
	require.NoError(e.t, err)
	var out []string
	for _, img := range imgs {
		out = append(out, img.Id[len("sha256:"):])
	}
	slices.Sort(out)
	return out
}

func TestDeleteUnusedImages(t *testing.T) {
	e := newEnv(t, imagegc.Policy{}, map[string]uint64{"used": 100, "a": 200, "b": 300})
	require.NoError(t, e.rt.AddImage(&runtimeapi.Image{Id: "sha256:pause", RepoTags: []string{pause}, Size: 10}))
	require.NoError(t, e.rt.AddImage(&runtimeapi.Image{Id: "sha256:pinned", Pinned: true, Size: 20}))
	c := e.use("used")
	ctx := t.Context()

	// First seen now: younger than the minimum age (2m), all kept.
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	assert.Equal(t, []string{"a", "b", "pause", "pinned", "used"}, e.images())

	e.clk.Step(2 * time.Minute)
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	assert.Equal(t, []string{"pause", "pinned", "used"}, e.images(), "unused ones go; in use, pinned by option and pinned by the runtime stay")

	// A container that exited still uses its image; once removed, the
	// image goes.
	require.NoError(t, e.rt.StartContainer(ctx, c))
	require.NoError(t, e.rt.ExitContainer(c, 0, "Completed"))
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	assert.Contains(t, e.images(), "used")
	e.drop(c)
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	assert.Equal(t, []string{"pause", "pinned"}, e.images())
	assert.Empty(t, e.rec.Events())
}

func TestDeleteUnusedImagesKeepsAnImageSeenLate(t *testing.T) {
	e := newEnv(t, imagegc.Policy{}, map[string]uint64{"old": 100})
	ctx := t.Context()
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	e.clk.Step(time.Minute)
	require.NoError(t, e.rt.AddImage(&runtimeapi.Image{Id: "sha256:new", Size: 100})) // just pulled
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	e.clk.Step(time.Minute)
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	assert.Equal(t, []string{"new"}, e.images(), "old is 2m old and goes; new is 1m old and stays")
	e.clk.Step(time.Minute)
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	assert.Empty(t, e.images())
}

// lruEnv has four unused images of 100 bytes whose last use is known:
// never (n1 first seen before n2), then u1 used until t0+1m, u2 until t0+2m.
// The clock ends at t0+10m.
func lruEnv(t *testing.T) *env {
	e := newEnv(t, imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute},
		map[string]uint64{"n1": 100, "u1": 100, "u2": 100})
	ctx := t.Context()
	c1, c2 := e.use("u1"), e.use("u2")
	e.capacity.Store(1000)
	e.available.Store(1000)
	require.NoError(t, e.m.GarbageCollect(ctx)) // t0: n1, u1, u2 seen
	e.clk.Step(30 * time.Second)
	require.NoError(t, e.rt.AddImage(&runtimeapi.Image{Id: "sha256:n2", Size: 100}))
	require.NoError(t, e.m.GarbageCollect(ctx)) // t0+30s: n2 seen
	e.clk.Step(30 * time.Second)
	require.NoError(t, e.m.GarbageCollect(ctx)) // t0+1m: u1, u2 used
	e.drop(c1)
	e.clk.Step(time.Minute)
	require.NoError(t, e.m.GarbageCollect(ctx)) // t0+2m: u2 used
	e.drop(c2)
	e.clk.Step(8 * time.Minute)
	return e
}

func TestGarbageCollectFreesLeastRecentlyUsedDownToTheLowThreshold(t *testing.T) {
	// High 85%, low 80%: at or above 85% used, free until 20% of the
	// capacity is available.
	tests := []struct {
		name                string
		capacity, available uint64
		want                []string
	}{
		{"84% used: nothing", 1000, 160, []string{"n1", "n2", "u1", "u2"}},
		{"85% used: 50 bytes to free, one image", 1000, 150, []string{"n2", "u1", "u2"}},
		{"110 bytes to free: two images", 1000, 90, []string{"u1", "u2"}},
		{"200 bytes to free: the two never used", 1000, 0, []string{"u1", "u2"}},
		{"210 bytes to free: three, least recently used first", 1050, 0, []string{"u2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := lruEnv(t)
			e.capacity.Store(tt.capacity)
			e.available.Store(tt.available)
			require.NoError(t, e.m.GarbageCollect(t.Context()))
			assert.Equal(t, tt.want, e.images())
			assert.Empty(t, e.rec.Events())
		})
	}
}

func TestGarbageCollectFallsShort(t *testing.T) {
	e := lruEnv(t)
	e.use("u2") // in use again: only 300 bytes may go
	e.capacity.Store(10000)
	e.available.Store(1000) // 90% used; 1000 bytes to free for 80%
	err := e.m.GarbageCollect(t.Context())
	require.Error(t, err)
	msg := "Failed to garbage collect required amount of images. Attempted to free 1000 bytes, but only found 300 bytes eligible to free."
	assert.Contains(t, err.Error(), msg)
	assert.Equal(t, []string{"u2"}, e.images())
	assert.Equal(t, []string{"Warning FreeDiskSpaceFailed " + msg}, e.rec.Strings())
}

func TestGarbageCollectBadFilesystemStats(t *testing.T) {
	t.Run("no capacity", func(t *testing.T) {
		e := newEnv(t, imagegc.Policy{}, map[string]uint64{"a": 1})
		e.capacity.Store(0)
		e.available.Store(0)
		require.ErrorContains(t, e.m.GarbageCollect(t.Context()), "invalid capacity 0 on image filesystem")
		assert.Equal(t, []string{"Warning InvalidDiskCapacity invalid capacity 0 on image filesystem"}, e.rec.Strings())
	})
	t.Run("more available than capacity is full capacity", func(t *testing.T) {
		e := newEnv(t, imagegc.Policy{}, map[string]uint64{"a": 1})
		e.available.Store(5000)
		require.NoError(t, e.m.GarbageCollect(t.Context()))
		assert.Equal(t, []string{"a"}, e.images())
	})
	t.Run("no Fs", func(t *testing.T) {
		m, err := imagegc.New(imagegc.Options{Runtime: fake.New(fake.Options{})})
		require.NoError(t, err)
		require.ErrorIs(t, m.GarbageCollect(t.Context()), imagegc.ErrNoFsStats)
		require.ErrorIs(t, m.Run(t.Context()), imagegc.ErrNoFsStats)
		require.NoError(t, m.DeleteUnusedImages(t.Context()))
	})
}

func TestGarbageCollectMaxAge(t *testing.T) {
	e := newEnv(t, imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: 10 * time.Minute},
		map[string]uint64{"idle": 100, "busy": 100})
	ctx := t.Context()
	c := e.use("busy")
	require.NoError(t, e.m.GarbageCollect(ctx))
	e.clk.Step(10 * time.Minute)
	require.NoError(t, e.m.GarbageCollect(ctx))
	assert.Equal(t, []string{"busy", "idle"}, e.images(), "not yet watched for longer than MaxAge")
	e.drop(c) // busy was last used at t0+10m
	e.clk.Step(time.Second)
	require.NoError(t, e.m.GarbageCollect(ctx))
	assert.Equal(t, []string{"busy"}, e.images(), "idle unused since first seen, 10m1s ago: gone with the disk nearly empty")
	e.clk.Step(10 * time.Minute)
	require.NoError(t, e.m.GarbageCollect(ctx))
	assert.Empty(t, e.images())
}

func TestRemovalFailuresDoNotStopTheOthers(t *testing.T) {
	e := newEnv(t, imagegc.Policy{}, map[string]uint64{"a": 1, "b": 1, "c": 1})
	ctx := t.Context()
	require.NoError(t, e.m.DeleteUnusedImages(ctx))
	e.clk.Step(2 * time.Minute)
	e.rt.InjectFault(fake.RemoveImage, fake.Fault{Err: cri.ErrUnavailable, Times: 1})
	err := e.m.DeleteUnusedImages(ctx)
	require.ErrorIs(t, err, cri.ErrUnavailable)
	assert.Contains(t, err.Error(), "remove image sha256:a")
	assert.Equal(t, []string{"a"}, e.images())
	require.NoError(t, e.m.DeleteUnusedImages(ctx), "tried again at the next call")
	assert.Empty(t, e.images())
}

func TestRuntimeErrors(t *testing.T) {
	for _, m := range []fake.Method{fake.ListImages, fake.ListContainers} {
		t.Run(string(m), func(t *testing.T) {
			e := newEnv(t, imagegc.Policy{}, map[string]uint64{"a": 1})
			e.rt.InjectFault(m, fake.Fault{Err: cri.ErrUnavailable})
			require.ErrorIs(t, e.m.DeleteUnusedImages(t.Context()), cri.ErrUnavailable)
			require.ErrorIs(t, e.m.GarbageCollect(t.Context()), cri.ErrUnavailable)
			e.rt.ClearFault(m)
			assert.Equal(t, []string{"a"}, e.images())
		})
	}
	t.Run("a hung runtime ends with the context, and the next pass can run", func(t *testing.T) {
		e := newEnv(t, imagegc.Policy{}, map[string]uint64{"a": 1})
		e.rt.InjectFault(fake.ListImages, fake.Fault{Hang: true, Times: 1})
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, e.m.DeleteUnusedImages(ctx), context.DeadlineExceeded)
		require.NoError(t, e.m.DeleteUnusedImages(t.Context()))
	})
}

func TestRunRecordsImageGCFailedFromTheSecondFailureInARow(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	rt := fake.New(fake.Options{Clock: clk})
	t.Cleanup(rt.Close)
	rec := &eventtest.Recorder{}
	passes := make(chan struct{})
	var fail atomic.Bool
	fail.Store(true)
	m, err := imagegc.New(imagegc.Options{Runtime: rt, Clock: clk, Recorder: rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "n1"},
		Fs: func(ctx context.Context) (uint64, uint64, error) {
			failing := fail.Load() // decided before the test sees the pass
			passes <- struct{}{}
			if failing {
				return 0, 0, errors.New("stats not ready")
			}
			return 1000, 1000, nil
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	pass := func() {
		t.Helper()
		select {
		case <-passes:
		case <-time.After(10 * time.Second):
			t.Fatal("no pass")
		}
	}
	// step moves the clock by a period once Run's ticker exists.
	step := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !clk.HasWaiters() {
			require.True(t, time.Now().Before(deadline), "Run does not wait for its ticker")
			time.Sleep(time.Millisecond) // polling interval
		}
		clk.Step(imagegc.DefaultPeriod)
	}
	pass() // at once: fails
	step()
	pass() // fails again: the event
	fail.Store(false)
	step()
	pass() // succeeds
	step()
	pass()
	cancel()
	require.NoError(t, <-done)
	reasons := rec.TakeReasons()
	assert.Equal(t, []string{imagegc.ReasonImageGCFailed}, reasons, "one event, for the second failure in a row")
}

func TestNewValidates(t *testing.T) {
	rt := fake.New(fake.Options{})
	t.Cleanup(rt.Close)
	tests := []struct {
		name string
		opts imagegc.Options
		want string
	}{
		{"no runtime", imagegc.Options{}, "Runtime is required"},
		{"high above 100", imagegc.Options{Runtime: rt, Policy: imagegc.Policy{HighThresholdPercent: 101}}, "high threshold 101% is not within 0-100"},
		{"low above high", imagegc.Options{Runtime: rt, Policy: imagegc.Policy{HighThresholdPercent: 50, LowThresholdPercent: 60}}, "low threshold 60% is above the high threshold 50%"},
		{"negative low", imagegc.Options{Runtime: rt, Policy: imagegc.Policy{HighThresholdPercent: 50, LowThresholdPercent: -1}}, "low threshold -1%"},
		{"negative min age", imagegc.Options{Runtime: rt, Policy: imagegc.Policy{HighThresholdPercent: 85, MinAge: -time.Second}}, "minimum age -1s is negative"},
		{"max age below min age", imagegc.Options{Runtime: rt, Policy: imagegc.Policy{HighThresholdPercent: 85, MinAge: time.Hour, MaxAge: time.Minute}}, "maximum age 1m0s is below the minimum age 1h0m0s"},
		{"negative period", imagegc.Options{Runtime: rt, Period: -time.Second}, "negative period"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := imagegc.New(tt.opts)
			require.ErrorIs(t, err, imagegc.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	assert.NoError(t, imagegc.DefaultPolicy().Validate())
}

// AfterFree follows every pass that removed images, with every image left
// (those in use and pinned too) and when the pass began; a pass under the
// high threshold calls nothing.
func TestAfterFree(t *testing.T) {
	e := lruEnv(t)
	e.use("u2")
	type call struct {
		remaining []string
		began     time.Time
	}
	var calls []call
	m, err := imagegc.New(imagegc.Options{Runtime: e.rt, Clock: e.clk, PinnedImages: []string{pause},
		Policy: imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute},
		Fs:     func(context.Context) (uint64, uint64, error) { return e.capacity.Load(), e.available.Load(), nil },
		AfterFree: func(_ context.Context, remaining []string, began time.Time) {
			calls = append(calls, call{remaining, began})
		}})
	require.NoError(t, err)
	e.capacity.Store(1000)
	e.available.Store(1000)
	require.NoError(t, m.GarbageCollect(t.Context()))
	assert.Empty(t, calls, "nothing to free")
	e.clk.Step(time.Minute)
	e.available.Store(0)
	require.NoError(t, m.GarbageCollect(t.Context()))
	require.Len(t, calls, 1)
	assert.Equal(t, call{[]string{"sha256:u1", "sha256:u2"}, e.clk.Now()}, calls[0], "n1 and n2 removed; u2, in use, is left too")
	require.NoError(t, m.DeleteUnusedImages(t.Context()))
	require.Len(t, calls, 2)
	assert.Equal(t, []string{"sha256:u2"}, calls[1].remaining)
}
