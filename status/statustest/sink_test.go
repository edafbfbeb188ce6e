package statustest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/statustest"
)

// The sink behaves like an API server for the calls the Manager makes.
func Example() {
	sink := &statustest.Sink{}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web", Namespace: "ns"}}
	sink.Add(p)
	ctx := context.Background()
	got, _ := sink.GetPod(ctx, p)
	_, _ = sink.UpdatePodStatus(ctx, got, v1.PodStatus{Phase: v1.PodRunning})
	stale := p.DeepCopy()
	stale.UID = "uid-0"
	fmt.Println(errors.Is(sink.DeletePod(ctx, stale), status.ErrPodNotFound))
	_ = sink.DeletePod(ctx, got)
	for _, c := range sink.Calls() {
		fmt.Println(c)
	}
	// Output:
	// true
	// Get ns/web uid-1 -> ok
	// Update ns/web uid-1 phase=Running -> ok
	// Delete ns/web uid-0 -> delete pod ns/web: pod not found
	// Delete ns/web uid-1 -> ok
}

func TestSinkFailHangHold(t *testing.T) {
	sink := &statustest.Sink{}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web", Namespace: "ns"}}
	sink.Add(p)
	boom := errors.New("boom")
	sink.Fail = func(op statustest.Op, _ *v1.Pod) error {
		if op == statustest.OpGet {
			return boom
		}
		return nil
	}
	_, err := sink.GetPod(context.Background(), p)
	assert.ErrorIs(t, err, boom)
	sink.Fail = nil

	sink.Hang = func(op statustest.Op, _ *v1.Pod) bool { return op == statustest.OpDelete }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, sink.DeletePod(ctx, p), context.DeadlineExceeded)
	_, ok := sink.Pod("ns", "web")
	assert.True(t, ok, "a hung delete does nothing")
	sink.Hang = nil

	sink.Hold(true)
	done := make(chan error, 1)
	go func() {
		_, err := sink.UpdatePodStatus(context.Background(), p, v1.PodStatus{Phase: v1.PodFailed})
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	require.NoError(t, sink.Wait(wctx, func([]statustest.Call) bool { return len(sink.Held()) == 1 }))
	stored, _ := sink.Pod("ns", "web")
	assert.Empty(t, stored.Status.Phase, "held: not written yet")
	sink.Release("uid-1")
	require.NoError(t, <-done)
	stored, _ = sink.Pod("ns", "web")
	assert.Equal(t, v1.PodFailed, stored.Status.Phase)
	assert.Len(t, sink.CallsOf(statustest.OpUpdate), 1)
}
