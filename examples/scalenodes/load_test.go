package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestWatchPodsResumes: when the API server ends the load's watch (as it
// closes a watcher that falls behind), the watch goes on from the last
// event's resource version, with the same selector, and misses nothing.
func TestWatchPodsResumes(t *testing.T) {
	cl := fake.NewClientset()
	cl.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}, nil
	})
	type call struct{ rv, selector string }
	calls := make(chan call, 4)
	watchers := []*watch.FakeWatcher{watch.NewFake(), watch.NewFake()}
	cl.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		r := a.(k8stesting.WatchActionImpl).WatchRestrictions
		calls <- call{r.ResourceVersion, r.Labels.String()}
		w := watchers[0]
		watchers = watchers[1:]
		return true, w, nil
	})
	first, second := watchers[0], watchers[1]
	w, err := watchPods(context.Background(), cl, "default", runLabel+"=r1")
	require.NoError(t, err)
	defer w.Stop()
	pod := func(name, rv string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv}}
	}
	next := func() watch.Event {
		t.Helper()
		select {
		case ev := <-w.ResultChan():
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
			return watch.Event{}
		}
	}
	wantCall := func(want call) {
		t.Helper()
		select {
		case got := <-calls:
			assert.Equal(t, want, got)
		case <-time.After(10 * time.Second):
			t.Fatalf("no watch of %v within 10s", want)
		}
	}
	wantCall(call{"5", runLabel + "=r1"})
	first.Add(pod("a", "6"))
	assert.Equal(t, "a", next().Object.(*v1.Pod).Name)
	first.Stop() // the API server ends the watch
	wantCall(call{"6", runLabel + "=r1"})
	second.Modify(pod("a", "7"))
	ev := next()
	assert.Equal(t, watch.Modified, ev.Type)
	assert.Equal(t, "7", ev.Object.(*v1.Pod).ResourceVersion)
}
