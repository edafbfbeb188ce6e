package agent

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	goruntime "runtime"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/status/node"
)

// Upstream's words for a pod stopped to make room for a critical one.
const (
	ReasonPreempting   = "Preempting"
	messagePreempted   = "Preempted in order to admit critical pod"
	conditionPreempted = "Pod was preempted by Kubelet to accommodate a critical pod."
)

// The labels the node has of its own, as upstream's initial Node: beta
// spellings of the OS and architecture.
const (
	labelOSBeta   = "beta.kubernetes.io/os"
	labelArchBeta = "beta.kubernetes.io/arch"
)

// newAdmission builds the admission chain, in upstream's order: the pod's
// validity (the agent's own: upstream validates in its sources), eviction
// under node pressure, sysctls, the operating system, a
// supplementalGroupsPolicy the runtime cannot apply, the allocations of
// the devices of device plugins (when Node.DevicePluginDir is set) and of
// the CPU and memory managers (with Options.Resources), through the
// topology manager when there is one, the predicates
// (resources against the node's allocatable, node affinity and selector,
// node name, host ports, NoExecute taints), then AppArmor, then pod-level
// resources when Resources.DisablePodLevelResources turns them off
// (PodLevelResourcesNotSupported), then the node
// features the pod needs and the node does not declare
// (PodFeatureUnsupported), then the node's shutdown (NodeShutdown while it
// shuts down). Nil parts are left out.
func newAdmission(b *blocks, preempt admission.PreemptorFunc) (admission.Chain, error) {
	pred, err := admission.NewPredicates(admission.PredicateOptions{
		Node:      admission.NodeGetterFunc(b.nodeView.admissionNode),
		GOOS:      goruntime.GOOS,
		Preemptor: preempt,
		Logger:    b.log.With("component", "admission"),
	})
	if err != nil {
		return nil, err
	}
	chain := admission.Chain{admission.PodHandlerFunc(func(pod *v1.Pod) (bool, string, string) {
		if err := podsync.CheckRunnable(pod); err != nil {
			return false, admission.ReasonUnexpectedAdmissionError, err.Error()
		}
		return true, "", ""
	})}
	if b.evict != nil {
		chain = append(chain, admission.PodHandlerFunc(b.evict.Admit))
	}
	chain = append(chain, b.sysctls,
		admission.PodHandlerFunc(func(pod *v1.Pod) (bool, string, string) { return admission.AdmitOS(pod, goruntime.GOOS) }),
		admission.SupplementalGroupsPolicy(b.features.supplementalGroupsPolicy))
	switch {
	case b.res.topology != nil && b.devices != nil:
		// The devices, CPUs and memory, aligned by the topology manager
		// and allocated in its Allocate phase, devices first, before the
		// predicates weigh resources: upstream's resource allocation
		// handler.
		chain = append(chain, withDevices(b.devices, b.res.admission(b.clock, b.metrics)))
	case b.res.topology != nil:
		chain = append(chain, b.res.admission(b.clock, b.metrics))
	case b.devices != nil:
		// Without resource managers the device manager allocates on its
		// own, in the same place.
		chain = append(chain, b.devices)
	}
	chain = append(chain, pred, admission.AppArmor{HostEnabled: b.appArmor},
		admission.PodLevelResources{Enabled: !b.opts.Resources.DisablePodLevelResources}, admission.NodeFeatures(declaredFeatures(b.opts)))
	if b.shutdown.Enabled() {
		// Last, as upstream's shutdown manager.
		chain = append(chain, admission.PodHandlerFunc(b.shutdown.Admit))
	}
	return chain, nil
}

// nodeView is the node as admission and allocation weigh pods against it:
// its Node object and its allocatable resources.
type nodeView struct {
	opts Options
	// status is the node status controller, set once it is built.
	status  *node.Controller
	devices *devices.Manager // nil without Node.DevicePluginDir
	log     *slog.Logger
}

// reservation is what the node keeps out of its allocatable resources:
// kube-reserved, system-reserved and the hard eviction thresholds
// (memory.available, nodefs.available), as upstream's node allocatable.
func (n *nodeView) reservation(capacity v1.ResourceList) v1.ResourceList {
	var hard v1.ResourceList
	if !n.opts.Eviction.Disabled {
		thresholds := n.opts.Eviction.Thresholds
		if thresholds == nil {
			thresholds = eviction.DefaultHardThresholds()
		}
		hard = eviction.HardReservation(thresholds, capacity)
	}
	return node.Reserved(capacity, n.opts.Node.KubeReserved, n.opts.Node.SystemReserved, hard)
}

// currentAllocatable is the node's allocatable as its status last reported
// it, or, before the first status, as the machine's capacity gives it now.
func (n *nodeView) currentAllocatable() (v1.ResourceList, error) {
	if n.status != nil {
		if st, ok := n.status.Status(); ok && st.Allocatable != nil {
			return st.Allocatable, nil
		}
	}
	capacity, err := n.opts.Node.Machine.Capacity(context.Background())
	if err != nil {
		return nil, fmt.Errorf("node capacity: %w", err)
	}
	return node.Allocatable(capacity, n.reservation(capacity)), nil
}

// admissionNode is the Node pods are admitted to: the one
// Options.Cluster.Node gives (the API server's, with its labels and taints)
// or else the agent's own (its name, the labels upstream's kubelet gives
// its Node, and Options.Node.Labels), with the allocatable resources the
// node's status reports.
func (n *nodeView) admissionNode() (*v1.Node, error) {
	var out *v1.Node
	if n.opts.Cluster.Node != nil {
		if got, err := n.opts.Cluster.Node.Node(); err == nil && got != nil {
			out = got.DeepCopy()
		} else if err != nil {
			n.log.Debug("Admitting against the agent's own node: the node is not known", "err", err)
		}
	}
	if out == nil {
		out = &v1.Node{}
		out.Name = n.opts.NodeName
		out.Labels = map[string]string{
			v1.LabelHostname: n.opts.NodeName, v1.LabelOSStable: goruntime.GOOS, v1.LabelArchStable: goruntime.GOARCH,
			labelOSBeta: goruntime.GOOS, labelArchBeta: goruntime.GOARCH,
		}
		maps.Copy(out.Labels, n.opts.Node.Labels)
	}
	alloc, err := n.currentAllocatable()
	if err != nil {
		return nil, err
	}
	if n.devices != nil {
		// The devices pods hold count as allocatable even when the node's
		// status shows fewer (held devices turned unhealthy, or a restart
		// before the plugins registered again), as upstream's
		// UpdatePluginResources counts them: the pods holding them are
		// admitted again.
		alloc = alloc.DeepCopy()
		for name, held := range n.devices.Allocated() {
			if have, ok := alloc[name]; !ok || have.Cmp(held) < 0 {
				alloc[name] = held
			}
		}
	}
	out.Status.Allocatable = alloc
	return out, nil
}

// preempt stops victim for the critical pod preemptor, as upstream's
// kubelet: a Preempting event, then a kill through the pod workers with
// the pod's own grace period, its status Failed with reason Preempting and
// a DisruptionTarget condition. It waits for the kill up to one and a half
// grace periods, at least 10s.
func (h *handler) preempt(victim, preemptor *v1.Pod) error {
	h.events.Eventf(victim, v1.EventTypeWarning, ReasonPreempting, "%s", messagePreempted)
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if g := victim.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	timeout := max(time.Duration(grace)*time.Second*3/2, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := h.clock.AfterFunc(timeout, cancel)
	defer t.Stop()
	now := h.clock.Now()
	err := h.workers.KillPod(ctx, victim, podworkers.KillPodOptions{
		Evict: true,
		PodStatusFunc: func(s *v1.PodStatus) {
			s.Phase, s.Reason, s.Message = v1.PodFailed, ReasonPreempting, messagePreempted
			setCondition(s, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
				Reason: v1.PodReasonTerminationByKubelet, Message: conditionPreempted, LastTransitionTime: metav1.NewTime(now)})
		},
	})
	if err != nil {
		return fmt.Errorf("preempt pod %s for %s: %w", podDesc(victim), podDesc(preemptor), err)
	}
	return nil
}
