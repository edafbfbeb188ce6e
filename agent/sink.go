package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/status"
)

// memorySink is the status sink of a standalone agent: it keeps the last
// status written for each pod, as an API server would, and prints a line
// whenever a pod's phase or container states change.
type memorySink struct {
	out io.Writer
	// inner, when set, is Options.Cluster.StatusSink: reads and writes go
	// to it, and the lines are still printed.
	inner status.Sink
	// holdAll: no API server holds the pods (no MirrorPods), so a pod
	// inner does not hold is the sink's own copy, and inner receives
	// every pod's status (see ClusterOptions.StatusSink).
	holdAll bool

	mu      sync.Mutex
	pods    map[types.UID]*v1.Pod
	printed map[types.UID]string
}

var _ status.Sink = (*memorySink)(nil)

func newMemorySink(out io.Writer, inner status.Sink, holdAll bool) *memorySink {
	return &memorySink{out: out, inner: inner, holdAll: holdAll, pods: map[types.UID]*v1.Pod{}, printed: map[types.UID]string{}}
}

// GetPod implements status.Sink: the pod as last written, or as configured.
// A static pod stands for its own mirror pod (marked with the mirror
// annotation), as the mirror pod an API server would hold; the status
// manager pushes a static pod's status only to a mirror pod. With an inner
// sink, the pod as inner holds it; a pod inner does not hold is the sink's
// own copy when holdAll.
func (s *memorySink) GetPod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	if s.inner != nil {
		got, err := s.inner.GetPod(ctx, pod)
		if !s.holdAll || !errors.Is(err, status.ErrPodNotFound) {
			return got, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[pod.UID]; ok {
		return p, nil
	}
	if podspec.IsStatic(pod) {
		mirror := pod.DeepCopy()
		if mirror.Annotations == nil {
			mirror.Annotations = map[string]string{}
		}
		mirror.Annotations[podspec.ConfigMirrorAnnotation] = pod.Annotations[podspec.ConfigHashAnnotation]
		return mirror, nil
	}
	return pod, nil
}

// UpdatePodStatus implements status.Sink.
func (s *memorySink) UpdatePodStatus(ctx context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	var p *v1.Pod
	if s.inner != nil {
		updated, err := s.inner.UpdatePodStatus(ctx, pod, st)
		if err != nil {
			return nil, err
		}
		p = updated
	}
	if p == nil {
		p = pod.DeepCopy()
		p.Status = st
	}
	line := summary(p)
	s.mu.Lock()
	s.pods[pod.UID] = p
	changed := s.printed[pod.UID] != line
	s.printed[pod.UID] = line
	s.mu.Unlock()
	if changed && s.out != nil {
		fmt.Fprintln(s.out, line)
	}
	return p, nil
}

// DeletePod implements status.Sink.
func (s *memorySink) DeletePod(ctx context.Context, pod *v1.Pod) error {
	if s.inner != nil {
		if err := s.inner.DeletePod(ctx, pod); err != nil && !errors.Is(err, status.ErrPodNotFound) {
			return err
		}
	}
	s.forget(pod.UID)
	return nil
}

func (s *memorySink) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, uid)
	delete(s.printed, uid)
}

// summary is one line about a pod for people:
//
//	default/web-node1  Running  Ready  web=running(ready) sidecar=running
func summary(p *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s  %s", p.Namespace, p.Name, orDash(string(p.Status.Phase)))
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			b.WriteString("  Ready")
		}
	}
	if p.Status.Reason != "" {
		fmt.Fprintf(&b, "  reason=%s", p.Status.Reason)
	}
	b.WriteString(" ")
	write := func(prefix string, cs []v1.ContainerStatus) {
		for _, c := range cs {
			fmt.Fprintf(&b, " %s%s=%s", prefix, c.Name, stateString(c))
		}
	}
	write("init:", p.Status.InitContainerStatuses)
	write("", p.Status.ContainerStatuses)
	return b.String()
}

func stateString(c v1.ContainerStatus) string {
	var s string
	switch {
	case c.State.Running != nil:
		s = "running"
		if c.Ready {
			s += "(ready)"
		}
	case c.State.Terminated != nil:
		s = fmt.Sprintf("terminated(%s,%d)", c.State.Terminated.Reason, c.State.Terminated.ExitCode)
	case c.State.Waiting != nil:
		s = "waiting(" + c.State.Waiting.Reason + ")"
	default:
		s = "unknown"
	}
	if c.RestartCount > 0 {
		s += fmt.Sprintf("[restarts=%d]", c.RestartCount)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// recorder is every block's EventRecorder (client-go's method shape): an
// event is counted (Metrics.Event), passed to Options.Cluster.Recorder and logged.
type recorder struct {
	metrics Metrics
	next    EventRecorder // Options.Cluster.Recorder; nil means none
	log     *slog.Logger
}

var _ EventRecorder = (*recorder)(nil)

// Eventf records an event.
func (r *recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.metrics.Event(eventtype, reason)
	if r.next != nil {
		r.next.Eventf(object, eventtype, reason, messageFmt, args...)
	}
	attrs := []any{"type", eventtype, "reason", reason, "message", fmt.Sprintf(messageFmt, args...)}
	if pod, ok := object.(*v1.Pod); ok {
		attrs = append(attrs, "pod", pod.Namespace+"/"+pod.Name)
	}
	if eventtype == v1.EventTypeWarning {
		r.log.Warn("Event", attrs...)
		return
	}
	r.log.Info("Event", attrs...)
}
