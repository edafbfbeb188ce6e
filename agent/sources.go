package agent

import (
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// customSource prepares the messages of a PodSource for the merge, as an
// API server prepares the pods it is given: each pod gets the API
// server's defaults (namespace "default" when it has none, then
// validation.DefaultPod) and is validated as the API server validates a
// pod it creates (validation.ValidatePod). An invalid pod is left out of
// its message (out of a SET, it is no longer asked for) with a Warning
// FailedValidation event naming what is wrong, once until the source sends
// it valid or stops sending it. Pods without a UID or a name go on with
// only their namespace defaulted: the merge refuses them, with its own
// event. It is used by one
// goroutine, the source's.
type customSource struct {
	name   string
	events EventRecorder
	log    *slog.Logger
	// prepared maps a pod as last sent to its prepared copy, so that a pod
	// sent again as the same object reaches the merge as the same object,
	// which takes it as unchanged without comparing it.
	prepared map[types.UID]preparedPod
	// reported are the invalid pods already reported, with their error.
	reported map[types.UID]string
}

type preparedPod struct{ sent, pod *v1.Pod }

func newCustomSource(name string, events EventRecorder, log *slog.Logger) *customSource {
	return &customSource{name: name, events: events, log: log, prepared: map[types.UID]preparedPod{}, reported: map[types.UID]string{}}
}

// prepare returns u with its pods prepared and the invalid ones left out.
func (c *customSource) prepare(u syncloop.PodUpdate) syncloop.PodUpdate {
	if u.Op == syncloop.OpRemove {
		for _, p := range u.Pods {
			if p != nil {
				delete(c.prepared, p.UID)
				delete(c.reported, p.UID)
			}
		}
		return u
	}
	out := u
	out.Source = c.name
	out.Pods = make([]*v1.Pod, 0, len(u.Pods))
	keep := map[types.UID]bool{}
	for _, p := range u.Pods {
		if p == nil || p.UID == "" || p.Name == "" {
			if p != nil && p.Namespace == "" {
				p = p.DeepCopy()
				p.Namespace = metav1.NamespaceDefault
			}
			out.Pods = append(out.Pods, p)
			continue
		}
		keep[p.UID] = true
		if pp, ok := c.prepared[p.UID]; ok && pp.sent == p {
			out.Pods = append(out.Pods, pp.pod)
			continue
		}
		pod := p.DeepCopy()
		if pod.Namespace == "" {
			pod.Namespace = metav1.NamespaceDefault
		}
		validation.DefaultPod(pod)
		if err := validation.ValidatePod(pod); err != nil {
			delete(c.prepared, p.UID)
			c.refuse(pod, err)
			continue
		}
		delete(c.reported, p.UID)
		c.prepared[p.UID] = preparedPod{sent: p, pod: pod}
		out.Pods = append(out.Pods, pod)
	}
	if u.Op == syncloop.OpSet {
		// What the source no longer sends is forgotten.
		for uid := range c.prepared {
			if !keep[uid] {
				delete(c.prepared, uid)
			}
		}
		for uid := range c.reported {
			if !keep[uid] {
				delete(c.reported, uid)
			}
		}
	}
	return out
}

// refuse reports an invalid pod, once for each error.
func (c *customSource) refuse(p *v1.Pod, err error) {
	msg := err.Error()
	if c.reported[p.UID] == msg {
		return
	}
	c.reported[p.UID] = msg
	c.log.Warn("pod failed validation, ignoring", "pod", p.Namespace+"/"+p.Name, "uid", p.UID, "source", c.name, "err", err)
	c.events.Eventf(p, v1.EventTypeWarning, source.ReasonFailedValidation,
		"Error validating pod %s from %s due to %v, ignoring", fmt.Sprintf("%s_%s(%s)", p.Name, p.Namespace, p.UID), c.name, err)
}
