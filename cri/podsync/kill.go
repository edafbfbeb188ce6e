package podsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Grace periods, upstream's.
const (
	// DefaultTerminationGracePeriod applies when the pod sets none.
	DefaultTerminationGracePeriod int64 = 30
	// MinimumGracePeriod is the least a container gets to stop, even after
	// a preStop hook used up its grace period.
	MinimumGracePeriod int64 = 2
)

// KillPod stops a pod: every running container of status with its grace
// period (the override when non-nil, else the pod's deletion grace period,
// else its terminationGracePeriodSeconds, else 30s), app containers first and
// in parallel, then init containers and sidecars in parallel; each first runs
// its preStop hook (exec, HTTP GET or sleep), which uses up part of the grace
// period. Then every sandbox of the pod is stopped. pod may be nil (a pod
// known only from the runtime): hooks are then read from the containers'
// annotations and the grace period from theirs.
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
	for _, group := range [][]*runtimeapi.ContainerStatus{apps, inits} {
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
				steps[i] = s.killContainer(ctx, pod, c, st, gracePeriodOverride, "")
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

// killContainer runs the preStop hook and stops one container.
func (s *Syncer) killContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, st *runtimeapi.ContainerStatus, override *int64, message string) StepResult {
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
	if hook != nil && grace > 0 && st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
		start := s.clock.Now()
		if err := s.runPreStop(ctx, pod, c, st, hook, time.Duration(grace)*time.Second); err != nil {
			s.log.Info("preStop hook failed", "container", name, "err", err)
			if pod != nil {
				s.event(pod, v1.EventTypeWarning, EventFailedPreStopHook, "PreStopHook failed: %v", err)
			}
		}
		grace -= int64(s.clock.Since(start) / time.Second)
	}
	if grace < MinimumGracePeriod {
		grace = MinimumGracePeriod
	}
	if pod != nil {
		if message != "" {
			s.event(pod, v1.EventTypeNormal, EventKilling, "%s", message)
		} else {
			s.event(pod, v1.EventTypeNormal, EventKilling, "Stopping container %s", name)
		}
	}
	if err := s.rt.StopContainer(ctx, st.GetId(), grace); err != nil {
		step.Err = fmt.Errorf("stop container %s (%s): %w: %w", name, st.GetId(), ErrKillContainer, err)
	}
	return step
}

// runPreStop runs a preStop handler, bounded by timeout and ctx.
func (s *Syncer) runPreStop(ctx context.Context, pod *v1.Pod, c *v1.Container, st *runtimeapi.ContainerStatus, h *v1.LifecycleHandler, timeout time.Duration) error {
	switch {
	case h.Exec != nil:
		resp, err := s.rt.ExecSync(ctx, st.GetId(), h.Exec.Command, timeout)
		if err != nil {
			return fmt.Errorf("exec %v: %w", h.Exec.Command, err)
		}
		if resp.GetExitCode() != 0 {
			return fmt.Errorf("exec %v: exit code %d: %s", h.Exec.Command, resp.GetExitCode(), resp.GetStderr())
		}
		return nil
	case h.HTTPGet != nil:
		return s.httpHook(ctx, pod, c, h.HTTPGet, timeout)
	case h.Sleep != nil:
		d := time.Duration(h.Sleep.Seconds) * time.Second
		if d > timeout {
			d = timeout
		}
		t := s.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.New("preStop handler has no action")
}

func (s *Syncer) httpHook(ctx context.Context, pod *v1.Pod, c *v1.Container, g *v1.HTTPGetAction, timeout time.Duration) error {
	host := g.Host
	if host == "" && pod != nil {
		host = pod.Status.PodIP
		if pod.Spec.HostNetwork && host == "" && len(s.opts.HostIPs) != 0 {
			host = s.opts.HostIPs[0]
		}
	}
	if host == "" {
		return errors.New("http hook: no host (pod IP unknown)")
	}
	port, err := hookPort(c, g.Port)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	url := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + g.Path
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("http hook %s: %w", url, err)
	}
	req.Close = true // one request: leave no idle connection behind
	for _, hd := range g.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("http hook %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("http hook %s: status %d", url, resp.StatusCode)
	}
	return nil
}

func hookPort(c *v1.Container, p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("http hook: unknown port %q", p.StrVal)
}
