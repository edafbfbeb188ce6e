package syncloop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// waitTimeout bounds every wait for the loop's goroutine.
const waitTimeout = 10 * time.Second

// recordingHandler sends one line per handler call, "Method pod,pod", on
// calls; HandlePodAdditions blocks on block when it is not nil.
type recordingHandler struct {
	calls      chan string
	cleanupErr error
	block      chan struct{}
}

func newRecordingHandler() *recordingHandler {
	return &recordingHandler{calls: make(chan string, 100)}
}

func names(pods []*v1.Pod) string {
	s := make([]string, len(pods))
	for i, p := range pods {
		s[i] = p.Name
	}
	return strings.Join(s, ",")
}

func (h *recordingHandler) HandlePodAdditions(pods []*v1.Pod) {
	h.calls <- "Additions " + names(pods)
	if h.block != nil {
		<-h.block
	}
}
func (h *recordingHandler) HandlePodUpdates(pods []*v1.Pod)   { h.calls <- "Updates " + names(pods) }
func (h *recordingHandler) HandlePodRemoves(pods []*v1.Pod)   { h.calls <- "Removes " + names(pods) }
func (h *recordingHandler) HandlePodReconcile(pods []*v1.Pod) { h.calls <- "Reconcile " + names(pods) }
func (h *recordingHandler) HandlePodSyncs(pods []*v1.Pod)     { h.calls <- "Syncs " + names(pods) }
func (h *recordingHandler) HandlePodCleanups(context.Context) error {
	h.calls <- "Cleanups"
	return h.cleanupErr
}

// next returns the next handler call, failing the test if none comes.
func (h *recordingHandler) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(waitTimeout):
		t.Fatal("no handler call")
		return ""
	}
}

// afterClock is a fake clock that also reports every duration passed to
// After, so that tests see the pauses the loop takes.
type afterClock struct {
	*testingclock.FakeClock
	afters chan time.Duration
}

func newAfterClock() *afterClock {
	return &afterClock{FakeClock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0)), afters: make(chan time.Duration, 100)}
}

func (c *afterClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.afters <- d
	return ch
}

var _ clock.WithTicker = (*afterClock)(nil)

func pod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
}

// harness runs a Loop over channels the test feeds.
type harness struct {
	t       *testing.T
	updates chan syncloop.PodUpdate
	handler *recordingHandler
	clock   *afterClock
	pods    *syncloop.PodSet
	loop    *syncloop.Loop
	done    chan error
	cancel  context.CancelFunc
}

// run starts the loop built from opts (Handler, Updates, Pods and Clock are
// filled in when empty) and stops it at the end of the test.
func run(t *testing.T, opts syncloop.Options) *harness {
	t.Helper()
	h := &harness{t: t, handler: newRecordingHandler(), clock: newAfterClock(), pods: syncloop.NewPodSet(), done: make(chan error, 1)}
	if opts.Handler == nil {
		opts.Handler = h.handler
	} else if r, ok := opts.Handler.(*recordingHandler); ok {
		h.handler = r
	}
	if opts.Updates == nil {
		h.updates = make(chan syncloop.PodUpdate)
		opts.Updates = h.updates
	}
	if opts.Pods == nil {
		opts.Pods = h.pods
	}
	if opts.Clock == nil {
		opts.Clock = h.clock
	}
	loop, err := syncloop.New(opts)
	require.NoError(t, err)
	h.loop = loop
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- loop.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(waitTimeout):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

// send hands an update to the loop.
func (h *harness) send(u syncloop.PodUpdate) {
	h.t.Helper()
	select {
	case h.updates <- u:
	case <-time.After(waitTimeout):
		h.t.Fatal(fmt.Sprintf("loop did not take update %v", u.Op))
	}
}

// waitTickers waits until the loop has created its two tickers, so that
// stepping the fake clock fires them.
func (h *harness) waitTickers() {
	h.t.Helper()
	require.Eventually(h.t, h.clock.HasWaiters, waitTimeout, time.Millisecond)
}
