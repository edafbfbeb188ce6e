package status

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's timings and ours.
const (
	// DefaultResyncPeriod is how often every cached status is checked
	// against what was pushed (upstream's syncPeriod).
	DefaultResyncPeriod = 10 * time.Second
	// DefaultWorkers is how many pushes run at once.
	DefaultWorkers = 4
	// DefaultPushTimeout bounds one pod's push (get, update, delete).
	DefaultPushTimeout = 10 * time.Second
	// DefaultRetryBackoff is the wait before retrying a failed push; it
	// doubles with each consecutive failure of the pod up to
	// DefaultMaxRetryBackoff.
	DefaultRetryBackoff = 500 * time.Millisecond
	// DefaultMaxRetryBackoff caps the retry wait.
	DefaultMaxRetryBackoff = 10 * time.Second
)

// ErrInvalidOptions is wrapped by New's error when a required option is
// missing or a value is out of range.
var ErrInvalidOptions = errors.New("invalid options")

// Options configures New. The zero value of every field but Sink is the
// documented default.
type Options struct {
	// Sink receives the statuses. Required.
	Sink Sink
	// DeletionSafety says when a pod's containers are all gone. Nil means
	// only TerminatePod says so.
	DeletionSafety PodDeletionSafety
	// Pods, when set, lets the resync notice a status changed behind the
	// Manager's back (the pod's status differs from the one pushed) and
	// push it again. Nil means no such check.
	Pods PodGetter
	// Clock is the time source. Nil means the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger receives the Manager's logs. Nil means discard.
	Logger *slog.Logger
	// ResyncPeriod: 0 means DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// Workers: 0 means DefaultWorkers.
	Workers int
	// PushTimeout: 0 means DefaultPushTimeout.
	PushTimeout time.Duration
	// RetryBackoff and MaxRetryBackoff: 0 means the defaults.
	RetryBackoff, MaxRetryBackoff time.Duration
}

// Manager is the node's versioned cache of pod statuses. Every change made
// through Set, SetContainerReadiness, SetContainerStartup or TerminatePod
// gets a new version and is pushed to the Sink by Run's workers; a status
// equal to the cached one is no change. Its methods are safe for concurrent
// use and never block on the sink.
type Manager struct {
	sink         Sink
	safety       PodDeletionSafety
	pods         PodGetter
	clock        clock.WithTickerAndDelayedExecution
	log          *slog.Logger
	resyncPeriod time.Duration
	workers      int
	timeout      time.Duration
	backoff      time.Duration
	maxBack      time.Duration

	kick chan struct{}

	mu      sync.Mutex
	running bool
	entries map[types.UID]*entry
	ready   []types.UID // FIFO of queued pods
}

// entry is one pod's cached status and push state.
type entry struct {
	pod      *v1.Pod
	status   v1.PodStatus // normalized; replaced, never modified
	version  uint64
	pushed   uint64 // newest version the sink has (or needed no write)
	finished bool   // TerminatePod was called
	queued   bool
	inflight bool
	delayed  bool // waiting for retryAt
	retryAt  time.Time
	failures int
	// checkedRV is the resourceVersion of the pod from Pods that was last
	// found to agree with the pushed status.
	checkedRV string
}

// New returns a Manager. It starts no goroutine: statuses are cached at
// once, and pushed once Run runs.
func New(opts Options) (*Manager, error) {
	if opts.Sink == nil {
		return nil, fmt.Errorf("new status manager: %w: Sink is required", ErrInvalidOptions)
	}
	if opts.ResyncPeriod < 0 || opts.Workers < 0 || opts.PushTimeout < 0 || opts.RetryBackoff < 0 || opts.MaxRetryBackoff < 0 {
		return nil, fmt.Errorf("new status manager: %w: negative period, count or timeout", ErrInvalidOptions)
	}
	m := &Manager{
		sink: opts.Sink, safety: opts.DeletionSafety, pods: opts.Pods,
		clock: opts.Clock, log: opts.Logger,
		resyncPeriod: opts.ResyncPeriod, workers: opts.Workers, timeout: opts.PushTimeout,
		backoff: opts.RetryBackoff, maxBack: opts.MaxRetryBackoff,
		kick:    make(chan struct{}, 1),
		entries: make(map[types.UID]*entry),
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.resyncPeriod == 0 {
		m.resyncPeriod = DefaultResyncPeriod
	}
	if m.workers == 0 {
		m.workers = DefaultWorkers
	}
	if m.timeout == 0 {
		m.timeout = DefaultPushTimeout
	}
	if m.backoff == 0 {
		m.backoff = DefaultRetryBackoff
	}
	if m.maxBack == 0 {
		m.maxBack = DefaultMaxRetryBackoff
	}
	return m, nil
}

// GetPodStatus returns a copy of the pod's cached status.
func (m *Manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[uid]
	if !ok {
		return v1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// ViewPodStatus calls f with the pod's cached status, under the Manager's
// lock, and reports whether there is one (f is not called when there is
// none). f must not keep the status, modify it or call the Manager: it
// reads, where GetPodStatus would copy (the prober's StatusViewer).
func (m *Manager) ViewPodStatus(uid types.UID, f func(*v1.PodStatus)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[uid]
	if ok {
		f(&e.status)
	}
	return ok
}

// Set caches status as the pod's status (typically what Generate returned)
// and queues a push if it differs from the cached one in anything the node
// writes. Transition times of the node's conditions are kept from the
// cached status (or pod.Status) when the condition's status did not change,
// and stamped now otherwise; the start time is kept once set. A status that
// shows a container running again that can never run again is refused with
// an error wrapping ErrIllegalTransition. Set keeps no reference to status.
func (m *Manager) Set(pod *v1.Pod, status v1.PodStatus) error {
	if pod == nil {
		return fmt.Errorf("set pod status: %w: no pod", ErrInvalidInput)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setLocked(pod, status.DeepCopy(), false)
}

// setLocked caches st (which it owns) for pod.
func (m *Manager) setLocked(pod *v1.Pod, st *v1.PodStatus, finished bool) error {
	e := m.entries[pod.UID]
	old := &pod.Status
	if e != nil {
		old = &e.status
	}
	if err := checkTransition(old, st, pod); err != nil {
		return fmt.Errorf("set pod status %s/%s (%s): %w", pod.Namespace, pod.Name, pod.UID, err)
	}
	now := metav1.NewTime(m.clock.Now())
	for i := range st.Conditions {
		if isNodeCondition(st.Conditions[i].Type) {
			SetTransitionTime(&st.Conditions[i], old.Conditions, now)
		}
	}
	if old.StartTime != nil && !old.StartTime.IsZero() {
		t := *old.StartTime
		st.StartTime = &t
	} else if st.StartTime == nil || st.StartTime.IsZero() {
		st.StartTime = &now
	}
	normalize(pod, st)
	if e != nil {
		e.pod = pod
		if !finished && equalByNode(&e.status, st) {
			return nil
		}
	} else {
		e = &entry{pod: pod}
		m.entries[pod.UID] = e
	}
	e.status = *st
	e.version++
	e.finished = e.finished || finished
	m.enqueueLocked(pod.UID, e)
	return nil
}

// SetContainerReadiness records a readiness probe's result for the
// container with the given ID ("runtime://id" or the bare ID) and updates
// the ContainersReady and Ready conditions. Unknown pods and containers are
// ignored.
func (m *Manager) SetContainerReadiness(uid types.UID, containerID string, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, st, cs := m.findContainerLocked(uid, containerID)
	if cs == nil || cs.Ready == ready || (ready && cs.State.Running == nil) {
		// A late Success does not make a stopped container ready.
		return
	}
	cs.Ready = ready
	containersReady := ContainersReadyCondition(e.pod, st.InitContainerStatuses, st.ContainerStatuses, st.Phase)
	podReady := readyFrom(e.pod, containersReady, st.Conditions)
	containersReady.ObservedGeneration, podReady.ObservedGeneration = e.pod.Generation, e.pod.Generation
	st.Conditions = replaceOrAppend(st.Conditions, containersReady)
	st.Conditions = replaceOrAppend(st.Conditions, podReady)
	if err := m.setLocked(e.pod, st, false); err != nil {
		m.log.Warn("set container readiness", "pod", uid, "container", containerID, "err", err)
	}
}

// SetContainerStartup records a startup probe's result for the container
// with the given ID. Unknown pods and containers are ignored.
func (m *Manager) SetContainerStartup(uid types.UID, containerID string, started bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, st, cs := m.findContainerLocked(uid, containerID)
	if cs == nil || (cs.Started != nil && *cs.Started == started) {
		return
	}
	cs.Started = &started
	if err := m.setLocked(e.pod, st, false); err != nil {
		m.log.Warn("set container startup", "pod", uid, "container", containerID, "err", err)
	}
}

// findContainerLocked returns the pod's entry, a copy of its status and the
// status of the container in that copy.
func (m *Manager) findContainerLocked(uid types.UID, containerID string) (*entry, *v1.PodStatus, *v1.ContainerStatus) {
	e, ok := m.entries[uid]
	if !ok || containerID == "" {
		return nil, nil, nil
	}
	st := e.status.DeepCopy()
	match := func(id string) bool {
		return id == containerID || (id != "" && strings.HasSuffix(id, "://"+containerID))
	}
	for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses} {
		for i := range list {
			if match(list[i].ContainerID) {
				return e, st, &list[i]
			}
		}
	}
	return nil, nil, nil
}

// TerminatePod marks the pod finished: its containers are gone. Container
// statuses that are not terminated become terminated with reason
// ContainerStatusUnknown and exit code 137 (regular containers once the pod
// had initialized; init containers that had started), a pod not yet in a
// terminal phase becomes Failed (except a static pod, as upstream), and the
// status is pushed even if otherwise unchanged, after which the sink is asked
// to delete a pod whose deletion was requested.
func (m *Manager) TerminatePod(pod *v1.Pod) {
	if pod == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var st *v1.PodStatus
	if e, ok := m.entries[pod.UID]; ok {
		st = e.status.DeepCopy()
	} else {
		st = pod.Status.DeepCopy()
	}
	unknown := func(cs *v1.ContainerStatus) {
		if cs.State.Terminated != nil {
			return
		}
		cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: ReasonContainerStatusUnknown, Message: msgVanishedOnTerminate, ExitCode: 137,
		}}
	}
	if hasInitialized(pod) {
		for i := range st.ContainerStatuses {
			unknown(&st.ContainerStatuses[i])
		}
	}
	// Init containers up to the last one that left waiting.
	last := 0
	for i := range st.InitContainerStatuses {
		if st.InitContainerStatuses[i].State.Waiting == nil {
			last = i
		}
	}
	for i := range st.InitContainerStatuses {
		if i <= last {
			unknown(&st.InitContainerStatuses[i])
		}
	}
	if !podspec.IsStatic(pod) && !podspec.IsTerminal(st.Phase) {
		st.Phase = v1.PodFailed
	}
	if err := m.setLocked(pod, st, true); err != nil {
		m.log.Warn("terminate pod", "pod", pod.UID, "err", err)
	}
}

// hasInitialized is upstream's hasPodInitialized, read from the pod's API
// status.
func hasInitialized(pod *v1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	n := len(pod.Status.InitContainerStatuses)
	if n == 0 {
		return false
	}
	cs := pod.Status.InitContainerStatuses[n-1]
	c := specContainer(pod.Spec.InitContainers, cs.Name)
	if c == nil {
		return false
	}
	if podspec.IsSidecar(c) {
		return cs.State.Running != nil && cs.Started != nil && *cs.Started
	}
	return (cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode == 0) ||
		(cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0)
}

// PushAgain pushes the pod's newest status again, even if unchanged: for
// a caller whose answer to DeletionSafety changed (the pod workers finished
// the pod's termination), so that a terminal phase held back while
// containers could run is written now. An unknown pod is ignored.
func (m *Manager) PushAgain(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[uid]
	if !ok {
		return
	}
	// A new version of the same status: a push in flight, which read the
	// old answer, is followed by another.
	e.version++
	m.enqueueLocked(uid, e)
}

// Remove forgets the pod's status; a push in flight finishes, nothing more
// is pushed.
func (m *Manager) Remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, uid)
}

// enqueueLocked queues the pod for a push unless it is queued, in flight
// (it is queued again when that ends) or waiting out a backoff.
func (m *Manager) enqueueLocked(uid types.UID, e *entry) {
	if e.queued || e.inflight || e.delayed {
		return
	}
	e.queued = true
	m.ready = append(m.ready, uid)
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// driftCheck is a pod whose status in the agent's pod cache must be
// compared with the one pushed.
type driftCheck struct {
	uid     types.UID
	version uint64
	pod     *v1.Pod
	status  v1.PodStatus
	could   bool
}

// resync queues every pod whose newest version was not pushed and, with
// Pods, every pod whose status was changed behind the Manager's back. The
// comparisons run without the lock, so Set never waits for them.
func (m *Manager) resync() {
	m.mu.Lock()
	checks := m.resyncLocked()
	m.mu.Unlock()
	if len(checks) == 0 {
		return
	}
	now := metav1.NewTime(m.clock.Now())
	same := make([]bool, len(checks))
	for i := range checks {
		c := &checks[i]
		merged := merge(c.pod.Status, c.status, c.could, now)
		same[i] = equalByNode(&c.pod.Status, &merged)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range checks {
		c := &checks[i]
		e, ok := m.entries[c.uid]
		if !ok || e.version != c.version || e.pushed != c.version {
			continue // changed meanwhile: it is pushed anyway
		}
		if same[i] {
			e.checkedRV = c.pod.ResourceVersion
			continue
		}
		m.log.Info("pod status differs from the pushed one; pushing again", "pod", c.uid)
		e.pushed = 0
		m.enqueueLocked(c.uid, e)
	}
}

// resyncLocked queues every pod whose newest version was not pushed, and
// returns the pods whose pod (from Pods) has a resourceVersion not yet
// checked against the pushed status.
func (m *Manager) resyncLocked() []driftCheck {
	var checks []driftCheck
	for uid, e := range m.entries {
		if e.queued || e.inflight || e.delayed {
			continue
		}
		if e.version > e.pushed {
			m.enqueueLocked(uid, e)
			continue
		}
		if m.pods == nil {
			continue
		}
		pod, ok := m.pods.GetPodByUID(uid)
		if !ok || pod.ResourceVersion == "" || pod.ResourceVersion == e.checkedRV {
			continue
		}
		checks = append(checks, driftCheck{uid: uid, version: e.version, pod: pod, status: e.status, could: m.couldHaveRunning(uid, e)})
	}
	return checks
}

func (m *Manager) couldHaveRunning(uid types.UID, e *entry) bool {
	if e.finished {
		return false
	}
	if m.safety != nil {
		return m.safety.CouldHaveRunningContainers(uid)
	}
	return true
}
