package nodeshutdown

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's reasons and messages (pkg/kubelet/nodeshutdown, events).
const (
	// ReasonTerminated and MessageTerminated are the status of a pod the
	// shutdown terminated, and the message of its DisruptionTarget
	// condition (reason TerminationByKubelet).
	ReasonTerminated  = "Terminated"
	MessageTerminated = "Pod was terminated in response to imminent node shutdown."
	// ReasonNotAdmitted and MessageNotAdmitted refuse a pod at admission
	// while the node shuts down.
	ReasonNotAdmitted  = "NodeShutdown"
	MessageNotAdmitted = "Pod was rejected as the node is shutting down."
	// EventReason is the reason of the node's events about a shutdown, with
	// EventShutdown or EventCancelled as the message.
	EventReason    = "Shutdown"
	EventShutdown  = "Shutdown manager detected shutdown event"
	EventCancelled = "Shutdown manager detected shutdown cancellation"
)

// DefaultPriority is the priority of the group GracePeriod makes,
// upstream's scheduling.DefaultPriorityWhenNoDefaultClassExists; the group
// of GracePeriodCriticalPods starts at podspec.SystemCriticalPriority.
const DefaultPriority int32 = 0

// ErrShuttingDown is ShutdownStatus's error while the node shuts down; its
// text is upstream's, which the node's Ready condition shows.
var ErrShuttingDown = errors.New("node is shutting down")

// ErrInvalidOptions is wrapped by New's error for options it cannot use.
var ErrInvalidOptions = errors.New("invalid options")

// PriorityGracePeriod is one entry of upstream's
// shutdownGracePeriodByPodPriority: pods whose priority is at least
// Priority (and below the next entry's) get GracePeriodSeconds, and the
// whole group is given that long.
type PriorityGracePeriod struct {
	Priority           int32
	GracePeriodSeconds int64
}

// Killer terminates a pod with a grace period and waits until its
// containers have stopped or ctx ends. status is applied to the pod's final
// status (phase, reason, message, conditions). The agent's pod workers
// implement it.
type Killer interface {
	KillPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, status func(*v1.PodStatus)) error
}

// KillerFunc adapts a function to Killer.
type KillerFunc func(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, status func(*v1.PodStatus)) error

// KillPod calls f.
func (f KillerFunc) KillPod(ctx context.Context, pod *v1.Pod, gracePeriodSeconds int64, status func(*v1.PodStatus)) error {
	return f(ctx, pod, gracePeriodSeconds, status)
}

var _ Killer = KillerFunc(nil)

// Unmounter waits until the pods' volumes are torn down or ctx ends, as
// upstream's WaitForAllPodsUnmount: a group's budget covers its volumes too,
// so that a CSI driver in a later group is still there to unmount them.
type Unmounter interface {
	WaitForUnmount(ctx context.Context, pods []*v1.Pod) error
}

// Recorder records events, with the method set of client-go's
// record.EventRecorder.Eventf.
type Recorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Options configure a Manager.
type Options struct {
	// GracePeriod is upstream's shutdownGracePeriod: the whole budget of a
	// shutdown. Zero disables graceful shutdown (Enabled is false).
	GracePeriod time.Duration
	// GracePeriodCriticalPods is upstream's
	// shutdownGracePeriodCriticalPods: the part of GracePeriod kept for
	// critical pods (priority podspec.SystemCriticalPriority and above), which are
	// terminated after the others. Zero means none.
	GracePeriodCriticalPods time.Duration
	// ByPodPriority is upstream's shutdownGracePeriodByPodPriority: groups
	// of pods by priority, terminated from the lowest priority up, each in
	// its own time. It cannot be given with the two periods above.
	ByPodPriority []PriorityGracePeriod
	// Pods returns the pods to terminate: the admitted pods that are not
	// terminal and whose termination has not begun (upstream's
	// GetActivePods). Required.
	Pods func() []*v1.Pod
	// Killer terminates the pods. Required.
	Killer Killer
	// Unmounter, when set, is waited on after a group's pods have stopped.
	Unmounter Unmounter
	// OnShutdown is called, in its own goroutine, when a shutdown begins,
	// so that the node's status says NotReady at once (upstream syncs the
	// node status). Nil means nothing is called.
	OnShutdown func(ctx context.Context)
	// Recorder receives the node's Shutdown events about NodeRef. Nil
	// means none.
	Recorder Recorder
	NodeRef  *v1.ObjectReference
	// Clock times the groups. Nil means the real clock.
	Clock clock.Clock
	// Logger receives logs. Nil means discard.
	Logger *slog.Logger
}

// Groups returns the priority groups the options describe, sorted from the
// lowest priority up: ByPodPriority, or else the two groups upstream makes
// of GracePeriod and GracePeriodCriticalPods (priority 0 with GracePeriod
// less GracePeriodCriticalPods, podspec.SystemCriticalPriority with
// GracePeriodCriticalPods). No groups means graceful shutdown is off.
func Groups(opts Options) []PriorityGracePeriod {
	groups := slices.Clone(opts.ByPodPriority)
	if len(groups) == 0 {
		if opts.GracePeriod <= 0 || opts.GracePeriodCriticalPods > opts.GracePeriod || opts.GracePeriodCriticalPods < 0 {
			return nil
		}
		groups = []PriorityGracePeriod{
			{Priority: DefaultPriority, GracePeriodSeconds: int64((opts.GracePeriod - opts.GracePeriodCriticalPods) / time.Second)},
			{Priority: podspec.SystemCriticalPriority, GracePeriodSeconds: int64(opts.GracePeriodCriticalPods / time.Second)},
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Priority < groups[j].Priority })
	return groups
}

// Group is a priority group with the pods it terminates together.
type Group struct {
	PriorityGracePeriod
	Pods []*v1.Pod
}

// Plan puts each pod in its group, as upstream's: the group of the highest
// priority not above the pod's (spec.priority, 0 when unset); a pod below
// every group goes to the lowest, one above every group to the highest.
// groups must be sorted (Groups sorts them). It is a pure function.
func Plan(groups []PriorityGracePeriod, pods []*v1.Pod) []Group {
	out := make([]Group, len(groups))
	for i, g := range groups {
		out[i].PriorityGracePeriod = g
	}
	if len(out) == 0 {
		return out
	}
	for _, pod := range pods {
		var prio int32
		if pod.Spec.Priority != nil {
			prio = *pod.Spec.Priority
		}
		i := sort.Search(len(out), func(i int) bool { return out[i].Priority > prio }) - 1
		i = max(i, 0)
		out[i].Pods = append(out[i].Pods, pod)
	}
	return out
}

// GracePeriodSeconds is the grace period pod gets in group g: the group's,
// or the pod's own terminationGracePeriodSeconds where that is not longer.
func GracePeriodSeconds(g PriorityGracePeriod, pod *v1.Pod) int64 {
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil && *s <= g.GracePeriodSeconds {
		return *s
	}
	return g.GracePeriodSeconds
}

// SetTerminatedStatus writes upstream's final status of a pod terminated by
// the node's shutdown into s, the status generated once its containers have
// stopped: phase Failed, reason Terminated, MessageTerminated, and a
// DisruptionTarget condition with reason TerminationByKubelet, its
// transition at now unless it was already true. A pod whose containers all
// exited 0 (they handled SIGTERM) stays Succeeded, with the condition but
// without the reason and message, as upstream's ends: its kubelet writes
// them before the kill, and the Succeeded phase generated after the kill
// does not keep them.
func SetTerminatedStatus(s *v1.PodStatus, generation int64, now time.Time) {
	if s.Phase != v1.PodSucceeded {
		s.Phase, s.Reason, s.Message = v1.PodFailed, ReasonTerminated, MessageTerminated
	}
	c := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: generation,
		Reason: v1.PodReasonTerminationByKubelet, Message: MessageTerminated, LastTransitionTime: metav1.NewTime(now)}
	for i := range s.Conditions {
		if s.Conditions[i].Type == v1.DisruptionTarget {
			if s.Conditions[i].Status == c.Status {
				c.LastTransitionTime = s.Conditions[i].LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// Manager is the node's graceful shutdown: while a shutdown is under way
// it refuses pods (Admit) and says so (ShutdownStatus, for the Ready
// condition), and Shutdown terminates the pods group by group.
type Manager struct {
	o      Options
	groups []PriorityGracePeriod
	log    *slog.Logger

	mu           sync.Mutex
	shuttingDown bool
	running      chan struct{} // closed when the shutdown under way ends; nil when none
	done         chan struct{} // closed once a shutdown has finished
	doneClosed   bool
}

// New validates opts and returns a Manager; it starts nothing. Options with
// no groups (GracePeriod zero) give a Manager that is not Enabled: it
// admits every pod and Shutdown returns at once, as upstream's kubelet
// without a shutdownGracePeriod shuts down at once.
func New(opts Options) (*Manager, error) {
	switch {
	case opts.GracePeriod < 0 || (opts.GracePeriod > 0 && opts.GracePeriod < time.Second):
		return nil, fmt.Errorf("node shutdown: shutdownGracePeriod %s must be either zero or otherwise >= 1 sec: %w", opts.GracePeriod, ErrInvalidOptions)
	case opts.GracePeriodCriticalPods < 0 || (opts.GracePeriodCriticalPods > 0 && opts.GracePeriodCriticalPods < time.Second):
		return nil, fmt.Errorf("node shutdown: shutdownGracePeriodCriticalPods %s must be either zero or otherwise >= 1 sec: %w", opts.GracePeriodCriticalPods, ErrInvalidOptions)
	case opts.GracePeriodCriticalPods > opts.GracePeriod:
		return nil, fmt.Errorf("node shutdown: shutdownGracePeriodCriticalPods %s must be <= shutdownGracePeriod %s: %w", opts.GracePeriodCriticalPods, opts.GracePeriod, ErrInvalidOptions)
	case len(opts.ByPodPriority) > 0 && (opts.GracePeriod > 0 || opts.GracePeriodCriticalPods > 0):
		return nil, fmt.Errorf("node shutdown: cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod: %w", ErrInvalidOptions)
	}
	for _, g := range opts.ByPodPriority {
		if g.GracePeriodSeconds < 0 {
			return nil, fmt.Errorf("node shutdown: priority %d: negative grace period %d: %w", g.Priority, g.GracePeriodSeconds, ErrInvalidOptions)
		}
	}
	m := &Manager{o: opts, groups: Groups(opts), log: opts.Logger, done: make(chan struct{})}
	if len(m.groups) > 0 {
		switch {
		case opts.Pods == nil:
			return nil, fmt.Errorf("node shutdown: Pods is required: %w", ErrInvalidOptions)
		case opts.Killer == nil:
			return nil, fmt.Errorf("node shutdown: Killer is required: %w", ErrInvalidOptions)
		}
	}
	if m.o.Clock == nil {
		m.o.Clock = clock.RealClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// Enabled reports whether shutdowns are graceful: there is at least one
// group.
func (m *Manager) Enabled() bool { return len(m.groups) > 0 }

// Groups returns the manager's priority groups, lowest priority first.
func (m *Manager) Groups() []PriorityGracePeriod { return slices.Clone(m.groups) }

// GracePeriod is the sum of the groups' grace periods: how long a shutdown
// may take (what upstream asks logind's InhibitDelayMaxSec to be).
func (m *Manager) GracePeriod() time.Duration {
	var s int64
	for _, g := range m.groups {
		s += g.GracePeriodSeconds
	}
	return time.Duration(s) * time.Second
}

// Admit refuses every pod while the node shuts down, with upstream's reason
// (NodeShutdown) and message; its shape is package admission's
// PodHandlerFunc.
func (m *Manager) Admit(*v1.Pod) (bool, string, string) {
	if m.ShutdownStatus() != nil {
		return false, ReasonNotAdmitted, MessageNotAdmitted
	}
	return true, "", ""
}

// ShutdownStatus returns ErrShuttingDown while a shutdown is under way
// (from Shutdown until Cancel), nil otherwise.
func (m *Manager) ShutdownStatus() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shuttingDown {
		return ErrShuttingDown
	}
	return nil
}

// Done is closed once a shutdown has terminated its pods (or spent its
// budget): the machine may go on shutting down.
func (m *Manager) Done() <-chan struct{} { return m.done }

// Shutdown begins the node's shutdown and returns when it has ended: the
// node reports the shutdown (ShutdownStatus, a Shutdown event, OnShutdown)
// and refuses new pods, then the active pods are terminated group by group,
// lowest priority first, each pod with the group's grace period (or its
// own where shorter) and upstream's Failed status; the next group begins
// when every pod of this one has stopped and its volumes are torn down, or
// when the group's grace period has passed. ctx ending stops the waiting,
// not the terminations already asked for. A call while a shutdown is under
// way waits for it. The node stays shutting down until Cancel. A Manager
// that is not Enabled returns at once.
func (m *Manager) Shutdown(ctx context.Context) error {
	if !m.Enabled() {
		m.finish()
		return nil
	}
	m.mu.Lock()
	if m.running != nil {
		running := m.running
		m.mu.Unlock()
		select {
		case <-running:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	running := make(chan struct{})
	m.running, m.shuttingDown = running, true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.running = nil
		m.mu.Unlock()
		close(running)
	}()

	m.log.Info("Shutdown manager detected new shutdown event", "event", "shutdown")
	if m.o.Recorder != nil && m.o.NodeRef != nil {
		m.o.Recorder.Eventf(m.o.NodeRef, v1.EventTypeNormal, EventReason, EventShutdown)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if m.o.OnShutdown != nil {
		wg.Add(1)
		go func() { defer wg.Done(); m.o.OnShutdown(ctx) }()
	}
	for _, g := range Plan(m.groups, m.o.Pods()) {
		if len(g.Pods) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		m.terminateGroup(ctx, g)
	}
	m.log.Info("Shutdown manager completed processing shutdown event, node will shutdown shortly")
	m.finish()
	return ctx.Err()
}

// terminateGroup kills g's pods at once and waits until they have stopped
// and their volumes are torn down, or g's grace period has passed.
func (m *Manager) terminateGroup(ctx context.Context, g Group) {
	budget := time.Duration(g.GracePeriodSeconds) * time.Second
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := m.o.Clock.NewTimer(budget)
	defer timer.Stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for _, pod := range g.Pods {
			wg.Add(1)
			go func() {
				defer wg.Done()
				grace := GracePeriodSeconds(g.PriorityGracePeriod, pod)
				m.log.Info("Shutdown manager killing pod with gracePeriod", "pod", pod.Namespace+"/"+pod.Name, "gracePeriod", grace)
				err := m.o.Killer.KillPod(gctx, pod, grace, func(s *v1.PodStatus) {
					SetTerminatedStatus(s, pod.Generation, m.o.Clock.Now())
				})
				if err != nil {
					m.log.Info("Shutdown manager failed killing pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				}
			}()
		}
		wg.Wait()
		if m.o.Unmounter != nil && gctx.Err() == nil {
			if err := m.o.Unmounter.WaitForUnmount(gctx, g.Pods); err != nil {
				m.log.Error("Failed while waiting for all the volumes belonging to Pods in this group to unmount", "priority", g.Priority, "err", err)
			}
		}
	}()
	select {
	case <-done:
		m.log.Info("Done waiting for all pods in group to terminate", "gracePeriod", g.GracePeriodSeconds, "priority", g.Priority)
	case <-timer.C():
		m.log.Info("Shutdown manager pod killing time out", "gracePeriod", g.GracePeriodSeconds, "priority", g.Priority)
	case <-ctx.Done():
	}
	cancel()
	<-done
}

func (m *Manager) finish() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.doneClosed {
		m.doneClosed = true
		close(m.done)
	}
}

// Cancel says the shutdown was called off, as logind's
// PrepareForShutdown(false): the node is ready and admits pods again. Pods
// already terminated stay so; a shutdown under way goes on to its end, as
// upstream's.
func (m *Manager) Cancel() {
	m.mu.Lock()
	was := m.shuttingDown
	m.shuttingDown = false
	m.mu.Unlock()
	if !was {
		return
	}
	m.log.Info("Shutdown manager detected new shutdown event", "event", "cancelled")
	if m.o.Recorder != nil && m.o.NodeRef != nil {
		m.o.Recorder.Eventf(m.o.NodeRef, v1.EventTypeNormal, EventReason, EventCancelled)
	}
}
