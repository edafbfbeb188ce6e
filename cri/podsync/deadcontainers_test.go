package podsync_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

// dead is a container status of the given name, ID, state and creation
// time (seconds), attempt 0.
func dead(name, id string, state runtimeapi.ContainerState, created int64) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{Id: id, State: state, CreatedAt: created * int64(time.Second),
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Labels:   map[string]string{cri.ContainerNameLabel: name}}
}

// The cases of upstream's getContainersToDeleteInPod and
// deleteContainersInPod, on CRI states.
func TestDeadContainersToRemove(t *testing.T) {
	// Three dead instances of "app" and one running, two dead of "side",
	// a created and an unknown "app", in no particular order.
	st := &cri.PodStatus{UID: "uid", Containers: []*runtimeapi.ContainerStatus{
		dead("app", "app-1", exited, 1),
		dead("side", "side-1", exited, 2),
		dead("app", "app-3", exited, 3),
		dead("app", "app-2", exited, 2),
		dead("side", "side-2", exited, 4),
		dead("app", "app-4", running, 5),
		dead("app", "app-created", created, 0),
		dead("app", "app-unknown", unknown, 0),
	}}
	for _, tc := range []struct {
		name      string
		status    *cri.PodStatus
		died      string
		keep      int
		removable bool
		want      []string
	}{
		{name: "same name only, newest kept", status: st, died: "app-3", keep: 1, want: []string{"app-2", "app-1"}},
		{name: "any instance of the name selects it", status: st, died: "app-1", keep: 1, want: []string{"app-2", "app-1"}},
		{name: "keep two", status: st, died: "app-3", keep: 2, want: []string{"app-1"}},
		{name: "keep as many as there are", status: st, died: "app-3", keep: 3},
		{name: "keep zero still keeps the newest", status: st, died: "app-3", keep: 0, want: []string{"app-2", "app-1"}},
		{name: "negative keep (no GC limit) keeps the newest", status: st, died: "side-2", keep: -1, want: []string{"side-1"}},
		{name: "other name", status: st, died: "side-2", keep: 1, want: []string{"side-1"}},
		{name: "died container unknown", status: st, died: "gone", keep: 1},
		{name: "sandbox died", status: st, died: "sandbox-1", keep: 1},
		{name: "no died container", status: st, died: "", keep: 1},
		{name: "died container running (stale status)", status: st, died: "app-4", keep: 1, want: []string{"app-2", "app-1"}},
		{name: "content removable: every exited container, any name", status: st, died: "app-3", keep: 1, removable: true,
			want: []string{"side-2", "app-3", "app-2", "side-1", "app-1"}},
		{name: "content removable: the died container need not be known", status: st, died: "sandbox-1", keep: 5, removable: true,
			want: []string{"side-2", "app-3", "app-2", "side-1", "app-1"}},
		{name: "content removable: running, created and unknown stay", status: &cri.PodStatus{Containers: []*runtimeapi.ContainerStatus{
			dead("app", "r", running, 1), dead("app", "c", created, 2), dead("app", "u", unknown, 3),
		}}, died: "r", removable: true},
		{name: "one dead instance kept", status: &cri.PodStatus{Containers: []*runtimeapi.ContainerStatus{
			dead("app", "new", running, 2), dead("app", "old", exited, 1),
		}}, died: "old", keep: 1},
		{name: "ties go to the higher attempt", status: &cri.PodStatus{Containers: []*runtimeapi.ContainerStatus{
			withAttempt(dead("app", "a0", exited, 1), 0), withAttempt(dead("app", "a1", exited, 1), 1),
		}}, died: "a0", keep: 1, want: []string{"a0"}},
		{name: "nil status", died: "x", keep: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podsync.DeadContainersToRemove(tc.status, tc.died, tc.keep, tc.removable)
			var ids []string
			for _, c := range got {
				ids = append(ids, c.GetId())
			}
			assert.Equal(t, tc.want, ids)
		})
	}
}

func withAttempt(c *runtimeapi.ContainerStatus, a uint32) *runtimeapi.ContainerStatus {
	c.Metadata.Attempt = a
	return c
}

// The status is only read.
func TestDeadContainersToRemoveLeavesStatus(t *testing.T) {
	status := &cri.PodStatus{Containers: []*runtimeapi.ContainerStatus{
		dead("app", "a1", exited, 1), dead("app", "a2", exited, 2), dead("app", "a3", exited, 3),
	}}
	podsync.DeadContainersToRemove(status, "a1", 1, false)
	assert.Equal(t, "a1", status.Containers[0].GetId())
	assert.Equal(t, "a3", status.Containers[2].GetId())
}

// RemoveDeadContainer removes the container and its log link, as the
// garbage collection does.
func TestRemoveDeadContainer(t *testing.T) {
	h := newLinkedCrasher(t)
	clk, s, links, pod, st := h.clk, h.s, h.links, h.pod, h.status
	ctx := context.Background()
	require.NoError(t, s.SyncPod(ctx, pod, st()).Err())
	clk.Step(time.Second) // exits
	require.NoError(t, s.SyncPod(ctx, pod, st()).Err())
	clk.Step(time.Second)
	cs := st().ContainersByName("app")
	require.Len(t, cs, 2)
	linkOf := func(id string) string {
		entries, err := os.ReadDir(links)
		require.NoError(t, err)
		for _, e := range entries {
			if strings.Contains(e.Name(), id) {
				return e.Name()
			}
		}
		return ""
	}
	old := cs[1]
	require.NotEmpty(t, linkOf(old.GetId()))

	require.NoError(t, s.RemoveDeadContainer(ctx, old))
	assert.Len(t, st().ContainersByName("app"), 1)
	assert.Empty(t, linkOf(old.GetId()), "its log link goes with it")
	assert.NotEmpty(t, linkOf(cs[0].GetId()))
	assert.NoError(t, s.RemoveDeadContainer(ctx, old), "CRI: removing a removed container is no error")
}

func TestNewDeletor(t *testing.T) {
	noop := podsync.ContainerRemoverFunc(func(context.Context, *runtimeapi.ContainerStatus) error { return nil })
	for _, tc := range []struct {
		name string
		opts podsync.DeletorOptions
		want error
	}{
		{"ok", podsync.DeletorOptions{Remover: noop}, nil},
		{"no remover", podsync.DeletorOptions{}, podsync.ErrMissingDependency},
		{"negative buffer", podsync.DeletorOptions{Remover: noop, Buffer: -1}, podsync.ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := podsync.NewDeletor(tc.opts)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
				assert.Nil(t, d)
				return
			}
			assert.NoError(t, err)
		})
	}
}

// recordingRemover records the removals; those of IDs in fail fail, and
// while block is set each removal waits for a release.
type recordingRemover struct {
	mu      sync.Mutex
	removed []string
	fail    map[string]bool
	release chan struct{} // nil: no wait
}

func (r *recordingRemover) RemoveDeadContainer(ctx context.Context, c *runtimeapi.ContainerStatus) error {
	if r.release != nil {
		select {
		case <-r.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail[c.GetId()] {
		return errors.New("boom")
	}
	r.removed = append(r.removed, c.GetId())
	return nil
}

func (r *recordingRemover) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.removed...)
}

// logLines collects a logger's messages.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *logLines) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func ids(names ...string) []*runtimeapi.ContainerStatus {
	var out []*runtimeapi.ContainerStatus
	for _, n := range names {
		out = append(out, &runtimeapi.ContainerStatus{Id: n})
	}
	return out
}

// The Deletor removes in order off the caller's goroutine; a failure is
// logged and the rest go on; Run returns when its context ends.
func TestDeletorRemoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recordingRemover{fail: map[string]bool{"b": true}}
		logs := &logLines{}
		d, err := podsync.NewDeletor(podsync.DeletorOptions{Remover: r, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()

		assert.Equal(t, 3, d.Enqueue(ids("a", "b", "c")...))
		synctest.Wait()
		assert.Equal(t, []string{"a", "c"}, r.got())
		assert.Contains(t, logs.all(), `msg="DeleteContainer returned error" containerID=b err=boom`)

		// Removed containers may be asked for again.
		assert.Equal(t, 1, d.Enqueue(ids("a")...))
		synctest.Wait()
		assert.Equal(t, []string{"a", "c", "a"}, r.got())

		cancel()
		assert.NoError(t, <-done)
	})
}

// Enqueue never blocks: a container waiting or being removed is not queued
// again, and past the buffer requests are dropped with upstream's log line.
func TestDeletorBufferAndDuplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recordingRemover{release: make(chan struct{})}
		logs := &logLines{}
		d, err := podsync.NewDeletor(podsync.DeletorOptions{Remover: r, Buffer: 2, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		require.NoError(t, err)

		// Before Run: two fit, the duplicate is skipped, the third dropped.
		assert.Equal(t, 2, d.Enqueue(ids("a", "b", "a", "c")...))
		assert.Contains(t, logs.all(), `msg="Failed to issue the request to remove container" containerID=c`)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()
		synctest.Wait() // "a" is being removed, "b" waits
		assert.Equal(t, 0, d.Enqueue(ids("a", "b")...), "waiting or being removed")
		assert.Equal(t, 1, d.Enqueue(ids("c")...), "room for one")
		for range 3 {
			r.release <- struct{}{}
		}
		synctest.Wait()
		assert.Equal(t, []string{"a", "b", "c"}, r.got())

		// A removal in progress sees the context end.
		assert.Equal(t, 1, d.Enqueue(ids("d")...))
		synctest.Wait()
		cancel()
		assert.NoError(t, <-done)
		assert.Equal(t, []string{"a", "b", "c"}, r.got())
	})
}
