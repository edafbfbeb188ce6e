package apiserver_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// waitFor bounds every wait of these tests; nothing normally takes more than
// milliseconds.
const waitFor = 10 * time.Second

// fastBackoff makes the reflector retry after a millisecond.
var fastBackoff = &wait.Backoff{Duration: time.Millisecond, Cap: time.Millisecond, Factor: 1, Steps: 1 << 20}

func recvSet(t *testing.T, ch <-chan syncloop.PodUpdate) []string {
	t.Helper()
	select {
	case u := <-ch:
		assert.Equal(t, syncloop.OpSet, u.Op)
		assert.Equal(t, syncloop.SourceAPI, u.Source)
		out := []string{}
		for _, p := range u.Pods {
			out = append(out, p.Name+"@"+p.ResourceVersion)
		}
		slices.Sort(out)
		return out
	case <-time.After(waitFor):
		t.Fatal("no SET from the pod source")
		return nil
	}
}

// runSource runs s until the test ends and checks that Run returns.
func runSource(t *testing.T, s *apiserver.PodSource) context.CancelFunc { return runUntilEnd(t, s.Run) }

// runUntilEnd runs run until the test ends and checks that it returns nil
// once its context ended.
func runUntilEnd(t *testing.T, run func(context.Context) error) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(waitFor):
			t.Error("Run did not return after its context ended")
		}
	})
	return cancel
}

func TestNewPodSourceArguments(t *testing.T) {
	out := make(chan syncloop.PodUpdate)
	client := fake.NewClientset()
	tests := []struct {
		name   string
		create func() error
	}{
		{"no client", func() error {
			_, err := apiserver.NewPodSource(nil, "n1", out, apiserver.PodSourceOptions{})
			return err
		}},
		{"no node", func() error {
			_, err := apiserver.NewPodSource(client, "", out, apiserver.PodSourceOptions{})
			return err
		}},
		{"no channel", func() error {
			_, err := apiserver.NewPodSource(client, "n1", nil, apiserver.PodSourceOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.create(), apiserver.ErrInvalidArgument)
		})
	}
}

func TestPodSourceWithClientset(t *testing.T) {
	a := apiPod("ns", "a", "ua", "n1")
	client := fake.NewClientset(a)
	out := make(chan syncloop.PodUpdate)
	s, err := apiserver.NewPodSource(client, "n1", out, apiserver.PodSourceOptions{Backoff: fastBackoff})
	require.NoError(t, err)
	runSource(t, s)

	assert.Equal(t, []string{"a@"}, recvSet(t, out), "the initial list is a SET")
	seen := 0
	for _, act := range client.Actions() {
		switch a := act.(type) {
		case k8stesting.ListAction:
			seen++
			assert.Equal(t, "spec.nodeName=n1", a.GetListRestrictions().Fields.String(), "list")
		case k8stesting.WatchAction:
			seen++
			assert.Equal(t, "spec.nodeName=n1", a.GetWatchRestrictions().Fields.String(), "watch")
		}
	}
	assert.Positive(t, seen, "the pods were listed")

	_, err = client.CoreV1().Pods("ns").Create(t.Context(), apiPod("ns", "b", "ub", "n1"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a@", "b@"}, recvSet(t, out), "every change sends the whole list")

	require.NoError(t, client.CoreV1().Pods("ns").Delete(t.Context(), "a", metav1.DeleteOptions{}))
	assert.Equal(t, []string{"b@"}, recvSet(t, out))
	assert.Eventually(t, func() bool { return s.Sent() == 3 }, waitFor, time.Millisecond)
}

// scriptedLW lists what the test sets and hands each watch to the test.
type scriptedLW struct {
	*cache.ListWatch

	mu       sync.Mutex
	list     []v1.Pod
	listRV   string
	lists    int
	watchRVs []string
	watchers chan *watch.FakeWatcher
}

func (l *scriptedLW) IsWatchListSemanticsUnSupported() bool { return true }

func newScriptedLW() *scriptedLW {
	l := &scriptedLW{watchers: make(chan *watch.FakeWatcher)}
	l.ListWatch = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.lists++
			return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: l.listRV}, Items: slices.Clone(l.list)}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			l.mu.Lock()
			l.watchRVs = append(l.watchRVs, o.ResourceVersion)
			l.mu.Unlock()
			w := watch.NewFake()
			select {
			case l.watchers <- w:
				return w, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
	return l
}

func (l *scriptedLW) setList(rv string, pods ...*v1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listRV = rv
	l.list = nil
	for _, p := range pods {
		l.list = append(l.list, *p)
	}
}

func (l *scriptedLW) counts() (lists int, watchRVs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lists, slices.Clone(l.watchRVs)
}

func nextWatcher(t *testing.T, l *scriptedLW) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-l.watchers:
		return w
	case <-time.After(waitFor):
		t.Fatal("the reflector did not watch")
		return nil
	}
}

func withRV(p *v1.Pod, rv string) *v1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	return p
}

func TestPodSourceResumesAfterWatchEndsAndExpires(t *testing.T) {
	a := apiPod("ns", "a", "ua", "n1")
	b := apiPod("ns", "b", "ub", "n1")
	c := apiPod("ns", "c", "uc", "n1")
	d := apiPod("ns", "d", "ud", "n1")
	lw := newScriptedLW()
	lw.setList("10", withRV(a, "5"), withRV(b, "6"))
	out := make(chan syncloop.PodUpdate)
	s, err := apiserver.NewPodSource(nil, "n1", out, apiserver.PodSourceOptions{ListerWatcher: lw, Backoff: fastBackoff})
	require.NoError(t, err)
	runSource(t, s)

	assert.Equal(t, []string{"a@5", "b@6"}, recvSet(t, out), "initial list")
	w1 := nextWatcher(t, lw)
	w1.Modify(withRV(a, "11"))
	assert.Equal(t, []string{"a@11", "b@6"}, recvSet(t, out))

	// The watch ends (its timeout, an API-server restart): the reflector
	// watches again from the last version it saw, without a list.
	w1.Stop()
	w2 := nextWatcher(t, lw)
	w2.Add(withRV(c, "12"))
	assert.Equal(t, []string{"a@11", "b@6", "c@12"}, recvSet(t, out), "nothing lost, nothing duplicated")
	w2.Delete(withRV(b, "13"))
	assert.Equal(t, []string{"a@11", "c@12"}, recvSet(t, out))
	lists, rvs := lw.counts()
	assert.Equal(t, 1, lists)
	assert.Equal(t, []string{"10", "11"}, rvs[:2], "the second watch resumes from the last event")

	// The watch expires (410 Gone: the server no longer has that version):
	// the reflector lists again, and the list replaces everything, so a
	// pod deleted meanwhile (c) goes and one added meanwhile (d) comes.
	lw.setList("20", withRV(a, "11"), withRV(d, "19"))
	w2.Error(&apierrors.NewResourceExpired("too old resource version: 13 (20)").ErrStatus)
	assert.Equal(t, []string{"a@11", "d@19"}, recvSet(t, out))
	nextWatcher(t, lw)
	lists, rvs = lw.counts()
	assert.Equal(t, 2, lists)
	assert.Equal(t, "20", rvs[len(rvs)-1])
	assert.Eventually(t, func() bool { return s.Sent() == 5 }, waitFor, time.Millisecond)
}

func TestPodSourceStopsWhileTheReceiverIsAway(t *testing.T) {
	lw := newScriptedLW()
	lw.setList("1", apiPod("ns", "a", "ua", "n1"))
	out := make(chan syncloop.PodUpdate) // nobody reads it
	s, err := apiserver.NewPodSource(nil, "n1", out, apiserver.PodSourceOptions{ListerWatcher: lw})
	require.NoError(t, err)
	cancel := runSource(t, s)
	require.Eventually(t, func() bool { l, _ := lw.counts(); return l == 1 }, waitFor, time.Millisecond)
	cancel() // the cleanup checks that Run returns
	assert.Equal(t, 0, s.Sent())
}
