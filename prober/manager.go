package prober

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// StatusProvider gives the pod's current status; the status manager
// implements it.
type StatusProvider interface {
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
}

// StatusViewer is what a StatusProvider may also implement to lend a pod's
// status for reading instead of copying it: ViewPodStatus calls f with the
// status, which f neither keeps nor modifies, and reports whether there is
// one (without calling f when there is none). A probe's turn reads a few
// fields of one container: copying the whole status for it was most of a
// farm of many nodes' probing cost. The status Manager implements it.
type StatusViewer interface {
	ViewPodStatus(uid types.UID, f func(*v1.PodStatus)) bool
}

// EventRecorder records events, with client-go's method shape.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// ErrMissingDependency wraps a required Options field that is nil.
var ErrMissingDependency = errors.New("missing dependency")

// Options configure a Manager.
type Options struct {
	// Runner runs probes. Required.
	Runner ProbeRunner
	// Status gives pod statuses. Required.
	Status StatusProvider
	// Clock drives the schedule. nil means the real clock.
	Clock clock.WithTicker
	// Workers bounds concurrent probe runs. 0 means 32.
	Workers int
	// Jitter returns the delay of a probe's first run, in [0, period).
	// nil means uniformly random; tests pass a function returning 0.
	Jitter func(period time.Duration) time.Duration
	// Recorder records Unhealthy and ProbeWarning events. nil: none.
	Recorder EventRecorder
	// Logger logs probe results. nil: discard.
	Logger *slog.Logger
	// AfterProbe, if set, is called after each probe run was recorded (a
	// test hook: wait for it instead of sleeping).
	AfterProbe func(uid types.UID, container string, t ProbeType, r Result)
}

// restartGrace is how long before a manager's start a container must have
// started to count as one that ran before an agent restart, as upstream's.
const restartGrace = 10 * time.Second

// Manager schedules every probe of every pod from one timer heap, runs them
// on a bounded pool, and keeps the results.
type Manager struct {
	opts      Options
	clk       clock.WithTicker
	log       *slog.Logger
	liveness  *ResultsManager
	readiness *ResultsManager
	startup   *ResultsManager

	// restartCutoff: a container running since before this time was
	// already running when this manager (the agent) started, as upstream
	// reckons a kubelet restart (see UpdatePodStatus).
	restartCutoff time.Time

	mu      sync.Mutex
	workers map[key]*worker
	heap    timerHeap
	wake    chan struct{}
}

// New returns a Manager; it starts no goroutine.
func New(opts Options) (*Manager, error) {
	if opts.Runner == nil {
		return nil, fmt.Errorf("new prober: Runner: %w", ErrMissingDependency)
	}
	if opts.Status == nil {
		return nil, fmt.Errorf("new prober: Status: %w", ErrMissingDependency)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 32
	}
	if opts.Jitter == nil {
		opts.Jitter = func(p time.Duration) time.Duration { return rand.N(p) }
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		opts: opts, clk: opts.Clock, log: log, restartCutoff: opts.Clock.Now().Add(-restartGrace),
		liveness: NewResultsManager(), readiness: NewResultsManager(), startup: NewResultsManager(),
		workers: make(map[key]*worker), wake: make(chan struct{}, 1),
	}, nil
}

// Liveness returns the liveness results.
func (m *Manager) Liveness() *ResultsManager { return m.liveness }

// Readiness returns the readiness results.
func (m *Manager) Readiness() *ResultsManager { return m.readiness }

// Startup returns the startup results.
func (m *Manager) Startup() *ResultsManager { return m.startup }

func (m *Manager) results(t ProbeType) *ResultsManager {
	switch t {
	case Liveness:
		return m.liveness
	case Readiness:
		return m.readiness
	default:
		return m.startup
	}
}

// probedContainers are the pod's containers that can have probes: regular
// containers and restartable init containers (sidecars).
func probedContainers(pod *v1.Pod) []*v1.Container {
	var cs []*v1.Container
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if podspec.IsSidecar(c) {
			cs = append(cs, c)
		}
	}
	for i := range pod.Spec.Containers {
		cs = append(cs, &pod.Spec.Containers[i])
	}
	return cs
}

// isSidecar reports whether c is one of the pod's restartable init
// containers.
func isSidecar(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if &pod.Spec.InitContainers[i] == c {
			return podspec.IsSidecar(c)
		}
	}
	return false
}

func probeOf(c *v1.Container, t ProbeType) *v1.Probe {
	switch t {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	default:
		return c.StartupProbe
	}
}

// AddPod registers a worker for each probe of the pod's containers; a
// probe already registered is left alone. The first run of each is delayed
// by Jitter.
//
// A first run due at once (no jitter) is taken here, from the pod's status
// as AddPod finds it, when it has nothing to do: for a pod being added,
// whose containers have not started, it finds nothing to probe, as
// upstream's worker, started just before the pod's sync, finds nothing, and
// the next run comes a period later (but for a readiness probe, which the
// first status that finds its container started triggers: see
// UpdatePodStatus). Taken in a goroutine instead, it would race the sync
// that starts the containers.
func (m *Manager) AddPod(pod *v1.Pod) {
	now := m.clk.Now()
	st, hasStatus := m.opts.Status.GetPodStatus(pod.UID)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range probedContainers(pod) {
		for _, t := range []ProbeType{Liveness, Readiness, Startup} {
			p := probeOf(c, t)
			if p == nil {
				continue
			}
			k := key{pod.UID, c.Name, t}
			if _, ok := m.workers[k]; ok {
				continue
			}
			w := &worker{key: k, pod: pod, spec: c, sidecar: isSidecar(pod, c), probe: p, due: now.Add(m.opts.Jitter(periodOf(p)))}
			if first := *w; !w.due.After(now) && first.plan(viewOf(&st, hasStatus, c.Name), m.startedLocked, now, m.restartCutoff) == (step{}) {
				w.due = now.Add(periodOf(p))
			}
			m.workers[k] = w
			heap.Push(&m.heap, w)
		}
	}
	m.kick()
}

// startedLocked reports whether the container's startup probe has
// succeeded.
func (m *Manager) startedLocked(id string) bool {
	r, ok := m.startup.Get(id)
	return ok && r == Success
}

func (m *Manager) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// RemovePod stops the pod's workers and forgets their results.
func (m *Manager) RemovePod(pod *v1.Pod) { m.removeWhere(func(k key) bool { return k.uid == pod.UID }) }

// StopLivenessAndStartup stops the liveness and startup workers of the
// pod's regular containers and forgets their results, for a pod being
// terminated: a container is not restarted for failing liveness while it
// shuts down, and its readiness probe goes on, so that a container that
// stops serving through its grace period turns unready, as upstream's.
// Sidecars keep every probe until RemovePod, as upstream's do.
func (m *Manager) StopLivenessAndStartup(pod *v1.Pod) {
	m.removeWhere(func(k key) bool {
		return k.uid == pod.UID && k.typ != Readiness &&
			slices.ContainsFunc(pod.Spec.Containers, func(c v1.Container) bool { return c.Name == k.container })
	})
}

// CleanupPods stops the workers of every pod not in desired.
func (m *Manager) CleanupPods(desired map[types.UID]struct{}) {
	m.removeWhere(func(k key) bool { _, ok := desired[k.uid]; return !ok })
}

func (m *Manager) removeWhere(match func(key) bool) {
	m.mu.Lock()
	var ids []struct {
		t  ProbeType
		id string
	}
	for k, w := range m.workers {
		if !match(k) {
			continue
		}
		w.stopped = true
		if w.index >= 0 {
			heap.Remove(&m.heap, w.index)
		}
		delete(m.workers, k)
		if w.containerID != "" {
			ids = append(ids, struct {
				t  ProbeType
				id string
			}{k.typ, w.containerID})
		}
	}
	m.mu.Unlock()
	for _, x := range ids {
		m.results(x.t).Remove(x.id)
	}
}

// Run drives the timer heap and the pool until ctx ends; it returns when
// every goroutine it started has ended.
//
// The pool has no idle goroutines: each due probe runs in a goroutine of
// its own that ends with the run, at most Workers at once (Run waits for a
// slot when all are taken). A node of 110 pods probed every 10s runs a few
// at a time; a pool of parked goroutines per manager cost more than the
// probes, with many agents in one process.
func (m *Manager) Run(ctx context.Context) error {
	slots := make(chan struct{}, m.opts.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		due, next, ok := m.popDue(m.clk.Now())
		for _, w := range due {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			wg.Go(func() {
				defer func() { <-slots }()
				m.runOne(ctx, w)
			})
		}
		if len(due) > 0 {
			continue
		}
		var timerC <-chan time.Time
		var timer clock.Timer
		if ok {
			timer = m.clk.NewTimer(next.Sub(m.clk.Now()))
			// A clock that moved past next before the timer was registered
			// (a fake clock stepped in between) would never fire it.
			if !m.clk.Now().Before(next) {
				timer.Stop()
				continue
			}
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-m.wake:
		case <-timerC:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// popDue removes the workers due at now, marks them in flight, and returns
// them with the next due time.
func (m *Manager) popDue(now time.Time) (due []*worker, next time.Time, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.heap) > 0 && !m.heap[0].due.After(now) {
		w := heap.Pop(&m.heap).(*worker)
		w.inFlight = true
		due = append(due, w)
	}
	if len(m.heap) > 0 {
		return due, m.heap[0].due, true
	}
	return due, time.Time{}, false
}

// runOne runs one worker's turn: plan, probe, record, reschedule.
func (m *Manager) runOne(ctx context.Context, w *worker) {
	v := m.view(w.key.uid, w.key.container)
	now := m.clk.Now()
	m.mu.Lock()
	if h := w.hint; h.hasStatus {
		w.hint = view{}
		if h.newerThan(v) {
			v = h
		}
	}
	s := w.plan(v, m.startedLocked, now, m.restartCutoff)
	pod, container, probe := w.pod, w.spec, w.probe
	m.mu.Unlock()
	res := m.results(w.key.typ)
	if s.err != nil {
		m.log.Warn("probe skipped", "pod", pod.Name, "container", container.Name, "err", s.err)
	}
	// A new container's initial result is only cached when this turn probes
	// it too: the turn then sends one update, after the probe, so that a
	// sync it causes sees the probe's result rather than racing it.
	quietReset := s.reset && s.probe && !s.notRunning && !s.adopted
	if s.reset {
		if s.oldID != "" {
			res.Remove(s.oldID)
		}
		switch {
		case s.adopted:
		case quietReset:
			res.setCache(s.newID, s.initial)
		default:
			_ = res.SetContext(ctx, s.newID, s.initial, w.key.uid)
		}
	}
	if s.notRunning {
		_ = res.SetContext(ctx, w.containerID, Failure, w.key.uid)
	}
	result := Unknown
	if s.probe {
		var sent bool
		result, sent = m.probe(ctx, w, pod, container, probe, v.podIP, s)
		if quietReset && !sent {
			_ = res.send(ctx, s.newID, s.initial, w.key.uid)
		}
	}
	m.mu.Lock()
	w.inFlight = false
	if w.stopped && w.containerID != "" {
		// Removed while in flight: undo any result this turn cached.
		id := w.containerID
		m.mu.Unlock()
		res.Remove(id)
		m.mu.Lock()
	}
	if !w.stopped {
		next := w.due.Add(periodOf(probe))
		if n := m.clk.Now(); w.triggered {
			next, w.triggered = n, false
		} else if next.Before(n) {
			next = n.Add(periodOf(probe))
		}
		w.due = next
		heap.Push(&m.heap, w)
	}
	m.mu.Unlock()
	m.kick()
	if m.opts.AfterProbe != nil {
		m.opts.AfterProbe(w.key.uid, w.key.container, w.key.typ, result)
	}
}

// probe runs one probe and records its result; it reports whether that sent
// an update.
func (m *Manager) probe(ctx context.Context, w *worker, pod *v1.Pod, c *v1.Container, p *v1.Probe, podIP string, s step) (Result, bool) {
	m.mu.Lock()
	id := w.containerID
	m.mu.Unlock()
	out, err := m.opts.Runner.Probe(ctx, Target{Pod: pod, PodIP: podIP, Container: c, ContainerID: id, Type: w.key.typ, Probe: p})
	if ctx.Err() != nil {
		return Unknown, false
	}
	if err != nil {
		m.event(pod, v1.EventTypeWarning, "Unhealthy", "%s probe errored: %v", w.key.typ, err)
		m.log.Info("probe errored", "pod", pod.Name, "container", c.Name, "probe", w.key.typ.String(), "err", err)
		return Unknown, false
	}
	switch {
	case out.Result == Failure:
		m.event(pod, v1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", w.key.typ, out.Output)
	case out.Warning != "":
		m.event(pod, v1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", w.key.typ, out.Warning)
	}
	m.mu.Lock()
	publish, ok := w.record(out.Result)
	stale := w.stopped || w.containerID != id
	m.mu.Unlock()
	sent := false
	if ok && !stale {
		sent, _ = m.results(w.key.typ).set(ctx, id, publish, w.key.uid)
	}
	return out.Result, sent
}

func (m *Manager) event(pod *v1.Pod, typ, reason, format string, args ...any) {
	if m.opts.Recorder != nil {
		m.opts.Recorder.Eventf(pod, typ, reason, format, args...)
	}
}

// UpdatePodStatus sets Started and Ready of the status's container statuses
// from the probe results, as upstream: a running container without a
// startup probe is started, with one only after its success; a started
// container without a readiness probe is ready, with one only after its
// success. A non-restartable init container is ready once it exited 0.
//
// Across an agent restart, as upstream v1.35+ across a kubelet restart
// (ChangeContainerStatusOnKubeletRestart off, its default): a container
// that was running before (since more than 10s before the manager was
// made) and whose status says Started (status.Generate carries it from the
// last status of the same container) stays started without its startup
// probe running again; until its readiness probe publishes a result, it is
// ready if it has no readiness probe or the pod (pod.Status, the API
// server's) is Ready.
func (m *Manager) UpdatePodStatus(pod *v1.Pod, status *v1.PodStatus) {
	for i := range status.ContainerStatuses {
		m.fill(pod, status, &status.ContainerStatuses[i])
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if podspec.IsSidecar(&c) {
			sidecars[c.Name] = true
		}
	}
	for i := range status.InitContainerStatuses {
		cs := &status.InitContainerStatuses[i]
		if sidecars[cs.Name] {
			m.fill(pod, status, cs)
			continue
		}
		// A regular init container is started while it runs (past its
		// startup probe, if any), and ready once it succeeded.
		id, _ := ParseContainerID(cs.ContainerID)
		started := m.started(pod.UID, cs, id)
		cs.Started = &started
		cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
	}
}

// started reports whether a container is running and past its startup
// probe (or has none). Without a startup result, a status that already
// says Started (carried over an agent restart) is believed.
func (m *Manager) started(uid types.UID, cs *v1.ContainerStatus, id string) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := m.startup.Get(id); ok && id != "" {
		return r == Success
	}
	if cs.Started != nil && *cs.Started {
		return true
	}
	return !m.hasWorker(uid, cs.Name, Startup)
}

func (m *Manager) hasWorker(uid types.UID, name string, t ProbeType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.workers[key{uid, name, t}]
	return ok
}

// fill sets a container status's Started and Ready. A started container
// whose readiness probe has not succeeded is unready, and its probe is
// triggered: upstream runs it at once whenever a status finds it so, which
// is what makes a container ready right after its startup probe succeeds
// rather than a readiness period later.
func (m *Manager) fill(pod *v1.Pod, st *v1.PodStatus, cs *v1.ContainerStatus) {
	id, _ := ParseContainerID(cs.ContainerID)
	started := m.started(pod.UID, cs, id)
	cs.Started = &started
	if !started {
		cs.Ready = false
		return
	}
	r, ok := m.readiness.Get(id)
	if ok && id != "" && r == Success {
		cs.Ready = true
		return
	}
	probed := m.trigger(key{pod.UID, cs.Name, Readiness}, st, cs)
	cs.Ready = !probed
	if !ok && m.ranBeforeStart(cs) {
		cs.Ready = !probed || podReady(pod)
	}
}

// ranBeforeStart reports whether a running container was already running
// before the manager was made: an agent restart adopted it.
func (m *Manager) ranBeforeStart(cs *v1.ContainerStatus) bool {
	r := cs.State.Running
	return r != nil && !r.StartedAt.IsZero() && r.StartedAt.Time.Before(m.restartCutoff)
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// trigger makes the worker k due now, and reports whether it exists. A
// worker in flight runs again as soon as its turn ends. Its period starts
// over from the triggered run, as upstream resets its ticker.
//
// The status being generated is not yet where the worker reads statuses
// (Options.Status) when the worker runs: the run probes the container as
// this status found it (cs, and the pod's IP) unless the stored status is
// as new (see view.newerThan).
func (m *Manager) trigger(k key, st *v1.PodStatus, cs *v1.ContainerStatus) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.workers[k]
	if !ok {
		return false
	}
	w.hint = view{hasStatus: true, podIP: st.PodIP}
	w.hint.setContainer(cs)
	now := m.clk.Now()
	switch {
	case w.inFlight:
		w.triggered = true
	case w.index >= 0 && w.due.After(now):
		w.due = now
		heap.Fix(&m.heap, w.index)
		m.kick()
	}
	return true
}

// newerThan reports whether the hint h sees the container newer than the
// stored status's view: that one has it not running, or running since an
// earlier time (a container that ran before a restart).
func (h view) newerThan(stored view) bool {
	if !stored.hasStatus || !stored.found || !stored.running {
		return true
	}
	return stored.startedAt.Before(h.startedAt)
}

// view reads the container's view from the status provider, through a
// StatusViewer when it is one.
func (m *Manager) view(uid types.UID, name string) view {
	if sv, ok := m.opts.Status.(StatusViewer); ok {
		var v view
		v.hasStatus = sv.ViewPodStatus(uid, func(st *v1.PodStatus) { v = viewOf(st, true, name) })
		return v
	}
	st, has := m.opts.Status.GetPodStatus(uid)
	return viewOf(&st, has, name)
}
