package prober

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// key names one worker: a probe of one container of one pod.
type key struct {
	uid       types.UID
	container string
	typ       ProbeType
}

// worker is the single-threaded state of one probe. The manager's mutex
// guards it; the decisions below are pure given the inputs.
type worker struct {
	key      key
	pod      *v1.Pod
	spec     *v1.Container
	sidecar  bool // spec is a restartable init container
	probe    *v1.Probe
	due      time.Time
	index    int // in the heap; -1 when not queued
	inFlight bool
	stopped  bool
	// triggered: a status asked for a run while this one was in flight.
	triggered bool
	// hint: what the status that triggered the next run saw of the
	// container (Manager.trigger); hint.hasStatus says there is one.
	hint view

	containerID string // bare CRI ID of the current container
	lastResult  Result
	resultRun   int
	onHold      bool
}

// initialResult is what a new container starts with: readiness is false
// until its first success; liveness is presumed passing; startup unknown.
func initialResult(t ProbeType) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	default:
		return Unknown
	}
}

// ParseContainerID turns "runtime://id" into the bare id.
func ParseContainerID(s string) (string, error) {
	rt, id, ok := strings.Cut(s, "://")
	if !ok || rt == "" || id == "" || strings.ContainsAny(id, "/:") {
		return "", fmt.Errorf("parse container ID %q: want <runtime>://<id>", s)
	}
	return id, nil
}

func containerStatus(st *v1.PodStatus, name string) *v1.ContainerStatus {
	for i := range st.ContainerStatuses {
		if st.ContainerStatuses[i].Name == name {
			return &st.ContainerStatuses[i]
		}
	}
	for i := range st.InitContainerStatuses {
		if st.InitContainerStatuses[i].Name == name {
			return &st.InitContainerStatuses[i]
		}
	}
	return nil
}

// view is what a worker's turn reads of the pod's status: a value, copied
// out of the status without copying the status.
type view struct {
	hasStatus bool   // the pod has a status
	podIP     string // the probes' default host
	// found: the container has a status with an ID, described by the
	// fields below.
	found       bool
	containerID string
	running     bool
	startedAt   time.Time // when running
	started     bool      // the status says Started
}

// viewOf reads the named container's view out of a pod's status.
func viewOf(st *v1.PodStatus, hasStatus bool, name string) view {
	v := view{hasStatus: hasStatus}
	if !hasStatus {
		return v
	}
	v.podIP = st.PodIP
	if cs := containerStatus(st, name); cs != nil {
		v.setContainer(cs)
	}
	return v
}

func (v *view) setContainer(cs *v1.ContainerStatus) {
	v.found, v.containerID = cs.ContainerID != "", cs.ContainerID
	if r := cs.State.Running; r != nil {
		v.running, v.startedAt = true, r.StartedAt.Time
	}
	v.started = cs.Started != nil && *cs.Started
}

// step is what a worker must do now.
type step struct {
	probe bool // run the probe
	// reset: the container changed; drop oldID's result and set initial.
	reset        bool
	oldID, newID string
	initial      Result
	// adopted: the new container ran before the manager started (an
	// agent restart): no initial result is set, so that a container that
	// was ready does not turn unready before its probe says so.
	adopted bool
	// notRunning: set Failure (the container is not running).
	notRunning bool
	err        error // a malformed container ID
}

// plan decides, from the container's view, whether to run the probe now,
// and updates the worker's container bookkeeping. started reports whether
// the container's startup probe (if any) has succeeded; a status that says
// Started counts too. A container running since before restartCutoff was
// adopted by a restarted agent.
func (w *worker) plan(v view, started func(id string) bool, now, restartCutoff time.Time) step {
	var s step
	if !v.hasStatus || !v.found {
		return s
	}
	id, err := ParseContainerID(v.containerID)
	if err != nil {
		s.err = err
		return s
	}
	isStarted := started(id) || v.started
	if id != w.containerID {
		s.reset, s.oldID, s.newID, s.initial = true, w.containerID, id, initialResult(w.key.typ)
		w.containerID, w.onHold, w.resultRun, w.lastResult = id, false, 0, Unknown
		if v.running && !v.startedAt.IsZero() && v.startedAt.Before(restartCutoff) {
			// A sidecar that had started is started for good: the pod's
			// next init container waits on its startup result.
			s.adopted = !(w.sidecar && w.key.typ == Startup && isStarted)
			if !s.adopted {
				s.initial = Success
			}
		}
	}
	if w.onHold {
		return s
	}
	if !v.running {
		s.notRunning = true
		w.resultRun = 0
		return s
	}
	switch w.key.typ {
	case Startup:
		if isStarted {
			return s
		}
	default:
		if w.hasStartup() && !isStarted {
			return s
		}
	}
	delay := time.Duration(w.probe.InitialDelaySeconds) * time.Second
	if now.Sub(v.startedAt) < delay {
		return s
	}
	s.probe = true
	return s
}

func (w *worker) hasStartup() bool { return w.spec.StartupProbe != nil }

// record counts a probe's result against the thresholds and returns the
// result to publish, if any.
func (w *worker) record(r Result) (Result, bool) {
	if r == w.lastResult {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = r, 1
	}
	success, failure := thresholds(w.probe)
	if (r == Failure && w.resultRun < failure) || (r == Success && w.resultRun < success) {
		return Unknown, false
	}
	if r == Failure && w.key.typ != Readiness {
		// Hold until the container restarts (a new container ID).
		w.onHold, w.resultRun = true, 0
	}
	return r, true
}

func thresholds(p *v1.Probe) (success, failure int) {
	success, failure = int(p.SuccessThreshold), int(p.FailureThreshold)
	if success <= 0 {
		success = 1
	}
	if failure <= 0 {
		failure = 3
	}
	return success, failure
}

func periodOf(p *v1.Probe) time.Duration {
	if p.PeriodSeconds > 0 {
		return time.Duration(p.PeriodSeconds) * time.Second
	}
	return 10 * time.Second
}

// timerHeap orders workers by due time.
type timerHeap []*worker

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	w := x.(*worker)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	w := old[n-1]
	old[n-1] = nil
	w.index = -1
	*h = old[:n-1]
	return w
}
