package podsync

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// Grace periods, upstream's.
const (
	// DefaultTerminationGracePeriod applies when the pod sets none.
	DefaultTerminationGracePeriod int64 = 30
	// MinimumGracePeriod is the least a container gets to stop, even after
	// a preStop hook used up its grace period.
	MinimumGracePeriod int64 = 2
)

// UnprepareResources releases what the pod's resource claims were given,
// once its containers have stopped and before its final status, as
// upstream's SyncTerminatingPod unprepares its dynamic resources:
// Options.DynamicResources' UnprepareResources when it is a
// ResourceUnpreparer, else nothing. An error is the caller's to retry.
func (s *Syncer) UnprepareResources(ctx context.Context, pod *v1.Pod) error {
	if u, ok := s.opts.DynamicResources.(ResourceUnpreparer); ok {
		return u.UnprepareResources(ctx, pod)
	}
	return nil
}

// KillPod stops a pod: every running container of status with its grace
// period (the override when non-nil, else the pod's deletion grace period,
// else its terminationGracePeriodSeconds, else 30s). Every container first
// runs its preStop hook (exec, HTTP GET or sleep), all at once, which uses
// up part of its grace period; then, as upstream orders termination, app
// containers and plain init containers are stopped at once, and each
// sidecar (restartable init container) only once every app container and
// the sidecar after it have stopped, so that sidecars stop in reverse order
// after the apps; the wait uses up grace period too. Then every sandbox of
// the pod is stopped. pod may be nil (a pod known only from the runtime):
// hooks are then read from the containers' annotations and the grace period
// from theirs, and the app containers stop before the init containers.
func (s *Syncer) KillPod(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, gracePeriodOverride *int64) Result {
	var res Result
	if status == nil {
		return res
	}
	var apps, inits []*runtimeapi.ContainerStatus
	for _, st := range status.Containers {
		if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING && st.GetState() != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			continue
		}
		if st.GetAnnotations()[cri.ContainerTypeAnnotation] == cri.ContainerTypeInit {
			inits = append(inits, st)
		} else {
			apps = append(apps, st)
		}
	}
	groups := [][]*runtimeapi.ContainerStatus{apps, inits}
	var order *stopOrder
	if pod != nil {
		groups = [][]*runtimeapi.ContainerStatus{append(apps, inits...)}
		order = newStopOrder(pod, groups[0])
	}
	for _, group := range groups {
		steps := make([]StepResult, len(group))
		var wg sync.WaitGroup
		for i, st := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var c *v1.Container
				if pod != nil {
					c = findContainer(pod, cri.ContainerName(st))
				}
				steps[i] = s.stopContainer(ctx, pod, c, st, status.IPs, gracePeriodOverride, "", order)
			}()
		}
		wg.Wait()
		res.Steps = append(res.Steps, steps...)
	}
	for _, sb := range status.Sandboxes {
		step := StepResult{Step: StepKillSandbox, Target: sb.GetId()}
		if err := s.rt.StopPodSandbox(ctx, sb.GetId()); err != nil {
			step.Message = err.Error()
			step.Err = fmt.Errorf("stop sandbox %s: %w: %w", sb.GetId(), ErrKillPodSandbox, err)
			if pod != nil {
				s.event(pod, v1.EventTypeWarning, EventFailedKillPod, "error killing pod: %v", err)
			}
		}
		res.Steps = append(res.Steps, step)
	}
	return res
}

// stopOrder is the order in which a pod's running containers stop: a
// sidecar waits for every running app container and for the running
// sidecar after it in the spec; nothing else waits.
type stopOrder struct {
	stopped map[string]chan struct{} // closed once the container stopped
	waitFor map[string][]chan struct{}
	mu      sync.Mutex
}

func newStopOrder(pod *v1.Pod, running []*runtimeapi.ContainerStatus) *stopOrder {
	o := &stopOrder{stopped: map[string]chan struct{}{}, waitFor: map[string][]chan struct{}{}}
	for _, st := range running {
		o.stopped[cri.ContainerName(st)] = make(chan struct{})
	}
	var apps []chan struct{}
	for _, c := range pod.Spec.Containers {
		if ch, ok := o.stopped[c.Name]; ok {
			apps = append(apps, ch)
		}
	}
	var later chan struct{} // the running sidecar after this one
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		ch, ok := o.stopped[c.Name]
		if !ok || !podspec.IsSidecar(c) {
			continue
		}
		o.waitFor[c.Name] = append(o.waitFor[c.Name], apps...)
		if later != nil {
			o.waitFor[c.Name] = append(o.waitFor[c.Name], later)
		}
		later = ch
	}
	return o
}

// wait blocks until it is name's turn to stop, or for at most grace, and
// returns how long it waited.
func (o *stopOrder) wait(ctx context.Context, clk clock.Clock, name string, grace time.Duration) time.Duration {
	deps := o.waitFor[name]
	if len(deps) == 0 || grace <= 0 {
		return 0
	}
	start := clk.Now()
	timeout := clk.After(grace)
	for _, ch := range deps {
		select {
		case <-ch:
		case <-timeout:
			return clk.Since(start)
		case <-ctx.Done():
			return clk.Since(start)
		}
	}
	return clk.Since(start)
}

// done records that name stopped (or gave up trying).
func (o *stopOrder) done(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.stopped[name]; ok {
		close(ch)
		delete(o.stopped, name)
	}
}

// runPreStop runs a preStop hook and waits for it for at most grace, as
// upstream: the hook goes on past the wait (an exec hook has no timeout of
// its own, and ends when its container is stopped), and its failure,
// however late, is reported.
func (s *Syncer) runPreStop(ctx context.Context, pod *v1.Pod, t hookTarget, hook *v1.LifecycleHandler, grace time.Duration) {
	timeout := grace
	if hook.Exec != nil {
		timeout = 0
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.runHook(ctx, t, hook, timeout); err != nil {
			s.log.Info("preStop hook failed", "container", t.name, "err", logValue(err))
			if pod != nil {
				// As upstream's, the event leaves the hook's output out.
				s.event(pod, v1.EventTypeWarning, EventFailedPreStopHook, "PreStopHook failed")
			}
		}
	}()
	wait := s.clock.NewTimer(grace)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C():
		s.log.Info("preStop hook did not finish within the grace period", "container", t.name, "gracePeriod", grace)
	case <-ctx.Done():
	}
}

// probeGracePeriod returns the grace period of a container killed because
// its liveness or startup probe failed, when that probe sets its own
// terminationGracePeriodSeconds and the pod is not being deleted (a
// deletion's grace period wins), as upstream; nil otherwise.
func probeGracePeriod(pod *v1.Pod, c *v1.Container, reason KillReason) *int64 {
	if pod == nil || c == nil || pod.DeletionGracePeriodSeconds != nil {
		return nil
	}
	var p *v1.Probe
	switch reason {
	case KillLivenessFailed:
		p = c.LivenessProbe
	case KillStartupFailed:
		p = c.StartupProbe
	}
	if p == nil || p.TerminationGracePeriodSeconds == nil {
		return nil
	}
	g := *p.TerminationGracePeriodSeconds
	return &g
}

// gracePeriod returns the seconds a container gets to stop.
func gracePeriod(pod *v1.Pod, st *runtimeapi.ContainerStatus, override *int64) int64 {
	switch {
	case override != nil:
		return *override
	case pod != nil && pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil:
		return *pod.Spec.TerminationGracePeriodSeconds
	case pod != nil:
		return DefaultTerminationGracePeriod
	}
	for _, k := range []string{cri.PodDeletionGracePeriodAnnotation, cri.PodTerminationGracePeriodAnnotation} {
		if v, err := strconv.ParseInt(st.GetAnnotations()[k], 10, 64); err == nil {
			return v
		}
	}
	return DefaultTerminationGracePeriod
}

// killContainer runs the preStop hook and stops one container. podIPs are
// the pod's IPs from the runtime, for an HTTP hook without a host.
func (s *Syncer) killContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, st *runtimeapi.ContainerStatus, podIPs []string, override *int64, message string) StepResult {
	return s.stopContainer(ctx, pod, c, st, podIPs, override, message, nil)
}

// stopContainer is killContainer that, with an order, waits after the hook
// for the container's turn to stop (KillPod).
func (s *Syncer) stopContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, st *runtimeapi.ContainerStatus, podIPs []string, override *int64, message string, order *stopOrder) StepResult {
	name := cri.ContainerName(st)
	step := StepResult{Step: StepKillContainer, Target: name, ContainerID: st.GetId(), Message: message}
	grace := gracePeriod(pod, st, override)
	var hook *v1.LifecycleHandler
	if c != nil && c.Lifecycle != nil {
		hook = c.Lifecycle.PreStop
	} else if c == nil {
		if js, ok := st.GetAnnotations()[cri.ContainerPreStopHandlerAnnotation]; ok {
			hook = new(v1.LifecycleHandler)
			if json.Unmarshal([]byte(js), hook) != nil {
				hook = nil
			}
		}
	}
	// The Killing event comes first, as upstream's: before the preStop
	// hook, which may take most of the grace period.
	if pod != nil {
		if message != "" {
			s.event(pod, v1.EventTypeNormal, EventKilling, "%s", message)
		} else {
			s.event(pod, v1.EventTypeNormal, EventKilling, "Stopping container %s", name)
		}
	}
	if hook != nil && grace > 0 && st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
		start := s.clock.Now()
		t := hookTarget{pod: pod, container: c, name: name, containerID: st.GetId(), podIPs: podIPs}
		s.runPreStop(ctx, pod, t, hook, time.Duration(grace)*time.Second)
		grace -= int64(s.clock.Since(start) / time.Second)
	}
	if order != nil {
		defer order.done(name)
		if grace > 0 {
			grace -= int64(order.wait(ctx, s.clock, name, time.Duration(grace)*time.Second) / time.Second)
		}
	}
	if grace < MinimumGracePeriod {
		grace = MinimumGracePeriod
	}
	if err := s.rt.StopContainer(ctx, st.GetId(), grace); err != nil {
		step.Err = fmt.Errorf("stop container %s (%s): %w: %w", name, st.GetId(), ErrKillContainer, err)
	}
	return step
}
