package nodeshutdown_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// pod is a pod with a priority (nil: unset), a termination grace period
// (nil: unset) and how long its containers take to stop once asked (-1:
// they never do).
type pod struct {
	name     string
	priority *int32
	grace    *int64
	stops    time.Duration
}

// kill is one pod's termination as the killer saw it.
type kill struct {
	name  string
	grace int64
	at    time.Duration // after the shutdown began
}

// killer terminates pods in the bubble's time: a pod stops after its
// script's time, or at the end of its grace period, whichever comes first.
type killer struct {
	start  time.Time
	stops  map[string]time.Duration
	mu     sync.Mutex
	kills  []kill
	status map[string]v1.PodStatus
}

func (k *killer) KillPod(ctx context.Context, p *v1.Pod, grace int64, status func(*v1.PodStatus)) error {
	k.mu.Lock()
	k.kills = append(k.kills, kill{p.Name, grace, time.Since(k.start)})
	k.mu.Unlock()
	d := min(k.stops[p.Name], time.Duration(grace)*time.Second)
	if k.stops[p.Name] < 0 {
		d = time.Hour
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	status(&st)
	k.mu.Lock()
	k.status[p.Name] = st
	k.mu.Unlock()
	return nil
}

func TestShutdownOrderAndBudget(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	grace := func(s int64) *int64 { return &s }
	tests := []struct {
		name     string
		opts     nodeshutdown.Options
		pods     []pod
		want     []kill
		duration time.Duration
	}{{
		name: "critical pods after the others, each group in its budget",
		opts: nodeshutdown.Options{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
		pods: []pod{
			{"web", nil, grace(60), -1},                      // gets the group's 20s, never stops by itself
			{"batch", prio(1000), grace(5), 3 * time.Second}, // its own 5s, stops after 3s
			{"low", prio(-10), nil, time.Second},             // below every group: the lowest
			{"dns", prio(podspec.SystemCriticalPriority), grace(30), time.Second},
			{"node-critical", prio(podspec.SystemCriticalPriority + 1000), nil, -1},
		},
		want: []kill{
			{"batch", 5, 0}, {"low", 20, 0}, {"web", 20, 0},
			{"dns", 10, 20 * time.Second}, {"node-critical", 10, 20 * time.Second},
		},
		duration: 30 * time.Second,
	}, {
		name: "a group that stops early hands over at once",
		opts: nodeshutdown.Options{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
		pods: []pod{
			{"web", nil, grace(30), 2 * time.Second},
			{"dns", prio(podspec.SystemCriticalPriority), grace(30), time.Second},
		},
		want:     []kill{{"web", 20, 0}, {"dns", 10, 2 * time.Second}},
		duration: 3 * time.Second,
	}, {
		name:     "no critical budget: critical pods get no grace",
		opts:     nodeshutdown.Options{GracePeriod: 10 * time.Second},
		pods:     []pod{{"web", nil, nil, -1}, {"dns", prio(podspec.SystemCriticalPriority), grace(30), -1}},
		want:     []kill{{"web", 10, 0}, {"dns", 0, 10 * time.Second}},
		duration: 10 * time.Second,
	}, {
		name: "only critical pods: the first group is skipped",
		opts: nodeshutdown.Options{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
		pods: []pod{{"dns", prio(podspec.SystemCriticalPriority), grace(30), -1}},
		want: []kill{{"dns", 10, 0}}, duration: 10 * time.Second,
	}, {
		name: "by pod priority: three groups, a boundary priority in its own group",
		opts: nodeshutdown.Options{ByPodPriority: []nodeshutdown.PriorityGracePeriod{
			{Priority: 100000, GracePeriodSeconds: 5}, {Priority: 0, GracePeriodSeconds: 15}, {Priority: 1000, GracePeriodSeconds: 10}}},
		pods: []pod{
			{"a", prio(999), nil, -1}, {"b", prio(1000), nil, -1}, {"c", prio(2000000000), nil, -1}, {"d", nil, grace(3), -1},
		},
		want:     []kill{{"a", 15, 0}, {"d", 3, 0}, {"b", 10, 15 * time.Second}, {"c", 5, 25 * time.Second}},
		duration: 30 * time.Second,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := &killer{start: time.Now(), stops: map[string]time.Duration{}, status: map[string]v1.PodStatus{}}
				var pods []*v1.Pod
				for _, p := range tc.pods {
					pods = append(pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p.name, Generation: 2},
						Spec: v1.PodSpec{Priority: p.priority, TerminationGracePeriodSeconds: p.grace}})
					k.stops[p.name] = p.stops
				}
				opts := tc.opts
				opts.Pods = func() []*v1.Pod { return pods }
				opts.Killer = k
				m, err := nodeshutdown.New(opts)
				require.NoError(t, err)
				require.True(t, m.Enabled())
				require.NoError(t, m.Shutdown(context.Background()))
				assert.Equal(t, tc.duration, time.Since(k.start), "how long the shutdown took")
				sort.Slice(k.kills, func(i, j int) bool {
					a, b := k.kills[i], k.kills[j]
					return a.at < b.at || a.at == b.at && a.name < b.name
				})
				assert.Equal(t, tc.want, k.kills)
				for name, st := range k.status {
					assert.Equal(t, v1.PodFailed, st.Phase, name)
					assert.Equal(t, "Terminated", st.Reason, name)
					assert.Equal(t, "Pod was terminated in response to imminent node shutdown.", st.Message, name)
					require.Len(t, st.Conditions, 2, name)
					c := st.Conditions[1]
					assert.Equal(t, v1.DisruptionTarget, c.Type, name)
					assert.Equal(t, v1.ConditionTrue, c.Status, name)
					assert.Equal(t, "TerminationByKubelet", c.Reason, name)
					assert.Equal(t, st.Message, c.Message, name)
					assert.Equal(t, int64(2), c.ObservedGeneration, name)
				}
				select {
				case <-m.Done():
				default:
					t.Error("Done is not closed after the shutdown")
				}
			})
		})
	}
}

// recorder records events as "reason: message".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(_ runtime.Object, _, reason, format string, _ ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, reason+": "+format)
}

// While the node shuts down it refuses pods and says so, and it reports
// the shutdown before the first pod is killed; Cancel makes it admit pods
// again.
func TestAdmissionAndStatusDuringShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
		rec := &recorder{}
		var synced bool
		killed := make(chan struct{})
		release := make(chan struct{})
		m, err := nodeshutdown.New(nodeshutdown.Options{
			GracePeriod: 30 * time.Second,
			Pods:        func() []*v1.Pod { return []*v1.Pod{web} },
			Killer: nodeshutdown.KillerFunc(func(ctx context.Context, _ *v1.Pod, _ int64, _ func(*v1.PodStatus)) error {
				close(killed)
				<-release
				return nil
			}),
			OnShutdown: func(context.Context) { synced = true },
			Recorder:   rec, NodeRef: &v1.ObjectReference{Kind: "Node", Name: "node1"},
		})
		require.NoError(t, err)
		ok, _, _ := m.Admit(web)
		assert.True(t, ok)
		assert.NoError(t, m.ShutdownStatus())

		done := make(chan error)
		go func() { done <- m.Shutdown(context.Background()) }()
		<-killed
		synctest.Wait()
		assert.True(t, synced, "the node status is synced when the shutdown begins")
		ok, reason, msg := m.Admit(web)
		assert.False(t, ok)
		assert.Equal(t, "NodeShutdown", reason)
		assert.Equal(t, "Pod was rejected as the node is shutting down.", msg)
		require.ErrorIs(t, m.ShutdownStatus(), nodeshutdown.ErrShuttingDown)
		assert.Equal(t, "node is shutting down", m.ShutdownStatus().Error())

		// A second trigger waits for the first shutdown.
		second := make(chan error)
		go func() { second <- m.Shutdown(context.Background()) }()
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("a second Shutdown returned while the first ran")
		default:
		}
		close(release)
		require.NoError(t, <-done)
		require.NoError(t, <-second)
		assert.Error(t, m.ShutdownStatus(), "still shutting down after the pods are gone")

		m.Cancel()
		ok, _, _ = m.Admit(web)
		assert.True(t, ok)
		assert.NoError(t, m.ShutdownStatus())
		assert.Equal(t, []string{"Shutdown: Shutdown manager detected shutdown event", "Shutdown: Shutdown manager detected shutdown cancellation"}, rec.events)
	})
}

// Without a grace period the manager is off, as upstream's: pods are
// admitted, Shutdown kills nothing and returns at once.
func TestDisabled(t *testing.T) {
	m, err := nodeshutdown.New(nodeshutdown.Options{})
	require.NoError(t, err)
	assert.False(t, m.Enabled())
	require.NoError(t, m.Shutdown(context.Background()))
	ok, _, _ := m.Admit(&v1.Pod{})
	assert.True(t, ok)
	assert.NoError(t, m.ShutdownStatus())
	<-m.Done()
}

// A context that ends stops the waiting: Shutdown returns its error and
// every goroutine it started has ended.
func TestShutdownContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := nodeshutdown.New(nodeshutdown.Options{GracePeriod: time.Minute,
			Pods: func() []*v1.Pod { return []*v1.Pod{{}} },
			Killer: nodeshutdown.KillerFunc(func(ctx context.Context, _ *v1.Pod, _ int64, _ func(*v1.PodStatus)) error {
				<-ctx.Done()
				return ctx.Err()
			})})
		require.NoError(t, err)
		start := time.Now()
		require.ErrorIs(t, m.Shutdown(ctx), context.DeadlineExceeded)
		assert.Equal(t, 5*time.Second, time.Since(start))
	})
}

func TestNewValidates(t *testing.T) {
	pods := func() []*v1.Pod { return nil }
	k := nodeshutdown.KillerFunc(func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error { return nil })
	tests := []struct {
		name string
		opts nodeshutdown.Options
		want string
	}{
		{"critical above total", nodeshutdown.Options{GracePeriod: 10 * time.Second, GracePeriodCriticalPods: 20 * time.Second, Pods: pods, Killer: k},
			"node shutdown: shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s: invalid options"},
		{"negative", nodeshutdown.Options{GracePeriod: -time.Second},
			"node shutdown: shutdownGracePeriod -1s must be either zero or otherwise >= 1 sec: invalid options"},
		{"under a second", nodeshutdown.Options{GracePeriod: 5 * time.Second, GracePeriodCriticalPods: 500 * time.Millisecond},
			"node shutdown: shutdownGracePeriodCriticalPods 500ms must be either zero or otherwise >= 1 sec: invalid options"},
		{"both forms", nodeshutdown.Options{GracePeriod: 10 * time.Second, ByPodPriority: []nodeshutdown.PriorityGracePeriod{{Priority: 0, GracePeriodSeconds: 1}}},
			"node shutdown: cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod: invalid options"},
		{"negative group", nodeshutdown.Options{ByPodPriority: []nodeshutdown.PriorityGracePeriod{{Priority: 5, GracePeriodSeconds: -1}}},
			"node shutdown: priority 5: negative grace period -1: invalid options"},
		{"no killer", nodeshutdown.Options{GracePeriod: 10 * time.Second, Pods: pods}, "node shutdown: Killer is required: invalid options"},
		{"no pods", nodeshutdown.Options{GracePeriod: 10 * time.Second, Killer: k}, "node shutdown: Pods is required: invalid options"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := nodeshutdown.New(tc.opts)
			require.Error(t, err)
			assert.True(t, errors.Is(err, nodeshutdown.ErrInvalidOptions))
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestSetTerminatedStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := metav1.NewTime(now.Add(-time.Minute))
	tests := []struct {
		name     string
		in       v1.PodStatus
		phase    v1.PodPhase
		since    metav1.Time
		numConds int
	}{
		{"running", v1.PodStatus{Phase: v1.PodRunning}, v1.PodFailed, metav1.NewTime(now), 1},
		{"succeeded stays, without the reason", v1.PodStatus{Phase: v1.PodSucceeded}, v1.PodSucceeded, metav1.NewTime(now), 1},
		{"condition already true keeps its time", v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue},
			{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: before}}},
			v1.PodFailed, before, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.in
			nodeshutdown.SetTerminatedStatus(&s, 3, now)
			assert.Equal(t, tc.phase, s.Phase)
			if tc.phase == v1.PodFailed {
				assert.Equal(t, nodeshutdown.ReasonTerminated, s.Reason)
				assert.Equal(t, nodeshutdown.MessageTerminated, s.Message)
			} else {
				assert.Empty(t, s.Reason)
				assert.Empty(t, s.Message)
			}
			require.Len(t, s.Conditions, tc.numConds)
			c := s.Conditions[tc.numConds-1]
			assert.Equal(t, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 3,
				Reason: v1.PodReasonTerminationByKubelet, Message: nodeshutdown.MessageTerminated, LastTransitionTime: tc.since}, c)
		})
	}
}

func TestPlan(t *testing.T) {
	groups := nodeshutdown.Groups(nodeshutdown.Options{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second})
	assert.Equal(t, []nodeshutdown.PriorityGracePeriod{{Priority: 0, GracePeriodSeconds: 20}, {Priority: 2000000000, GracePeriodSeconds: 10}}, groups)
	mk := func(name string, prio *int32) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Priority: prio}}
	}
	plan := nodeshutdown.Plan(groups, []*v1.Pod{mk("unset", nil), mk("neg", ptr.To[int32](-1)),
		mk("max", ptr.To[int32](1999999999)), mk("crit", ptr.To[int32](2000000000)), mk("top", ptr.To[int32](2147483647))})
	names := func(g nodeshutdown.Group) []string {
		var s []string
		for _, p := range g.Pods {
			s = append(s, p.Name)
		}
		return s
	}
	require.Len(t, plan, 2)
	assert.Equal(t, []string{"unset", "neg", "max"}, names(plan[0]))
	assert.Equal(t, []string{"crit", "top"}, names(plan[1]))
	assert.Empty(t, nodeshutdown.Plan(nil, []*v1.Pod{mk("a", nil)}))
}
