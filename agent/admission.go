package agent

import (
	"context"
	"fmt"
	"maps"
	goruntime "runtime"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
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
// supplementalGroupsPolicy the runtime cannot apply, the devices of device
// plugins (when Node.DevicePluginDir is set), the predicates
// (resources against the node's allocatable, node affinity and selector,
// node name, host ports, NoExecute taints), then AppArmor, then the node's
// shutdown (NodeShutdown while it shuts down).
func (a *Agent) newAdmission() (admission.Chain, error) {
	pred, err := admission.NewPredicates(admission.PredicateOptions{
		Node:      admission.NodeGetterFunc(a.admissionNode),
		GOOS:      goruntime.GOOS,
		Preemptor: admission.PreemptorFunc(a.preempt),
		Logger:    a.log.With("component", "admission"),
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
	if a.evict != nil {
		chain = append(chain, admission.PodHandlerFunc(a.evict.Admit))
	}
	chain = append(chain, a.sysctls,
		admission.PodHandlerFunc(func(pod *v1.Pod) (bool, string, string) { return admission.AdmitOS(pod, goruntime.GOOS) }),
		admission.SupplementalGroupsPolicy(a.runtimeSupportsSupplementalGroupsPolicy))
	if a.devices != nil {
		// Devices are allocated before the predicates weigh resources, as
		// upstream's resource allocation handler comes before them.
		chain = append(chain, a.devices)
	}
	chain = append(chain, pred, admission.AppArmor{HostEnabled: a.appArmor})
	if a.shutdown.Enabled() {
		// Last, as upstream's shutdown manager.
		chain = append(chain, admission.PodHandlerFunc(a.shutdown.Admit))
	}
	return chain, nil
}

// otherAdmittedPods are the pods admission weighs a new pod against, as
// upstream's active pods: every desired pod but pod itself, those refused,
// those whose worker has finished, and those in a terminal phase (in the
// configuration or as the agent reported it) unless they are still being
// stopped.
func (a *Agent) otherAdmittedPods(pod *v1.Pod) []*v1.Pod {
	pods := a.pods.GetPods()
	out := pods[:0]
	for _, p := range pods {
		if p.UID == pod.UID || a.isRejected(p.UID) || a.workers.IsPodKnownTerminated(p.UID) {
			continue
		}
		if a.isTerminal(p) && !a.workers.IsPodTerminationRequested(p.UID) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// isTerminal: the configuration or the agent's last status says the pod
// succeeded or failed.
func (a *Agent) isTerminal(p *v1.Pod) bool {
	if terminalPhase(p.Status.Phase) {
		return true
	}
	st, ok := a.status.GetPodStatus(p.UID)
	return ok && terminalPhase(st.Phase)
}

func terminalPhase(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// reservation is what the node keeps out of its allocatable resources:
// kube-reserved, system-reserved and the hard eviction thresholds
// (memory.available, nodefs.available), as upstream's node allocatable.
func (a *Agent) reservation(capacity v1.ResourceList) v1.ResourceList {
	var hard v1.ResourceList
	if !a.opts.Eviction.Disabled {
		thresholds := a.opts.Eviction.Thresholds
		if thresholds == nil {
			thresholds = eviction.DefaultHardThresholds()
		}
		hard = eviction.HardReservation(thresholds, capacity)
	}
	return node.Reserved(capacity, a.opts.Node.KubeReserved, a.opts.Node.SystemReserved, hard)
}

// currentAllocatable is the node's allocatable as its status last reported
// it, or, before the first status, as the machine's capacity gives it now.
func (a *Agent) currentAllocatable() (v1.ResourceList, error) {
	if st, ok := a.node.Status(); ok && st.Allocatable != nil {
		return st.Allocatable, nil
	}
	capacity, err := a.opts.Node.Machine.Capacity(context.Background())
	if err != nil {
		return nil, fmt.Errorf("node capacity: %w", err)
	}
	return node.Allocatable(capacity, a.reservation(capacity)), nil
}

// admissionNode is the Node pods are admitted to: the one
// Options.Cluster.Node gives (the API server's, with its labels and taints)
// or else the agent's own (its name, the labels upstream's kubelet gives
// its Node, and Options.Node.Labels), with the allocatable resources the
// node's status reports.
func (a *Agent) admissionNode() (*v1.Node, error) {
	var n *v1.Node
	if a.opts.Cluster.Node != nil {
		if got, err := a.opts.Cluster.Node.Node(); err == nil && got != nil {
			n = got.DeepCopy()
		} else if err != nil {
			a.log.Debug("Admitting against the agent's own node: the node is not known", "err", err)
		}
	}
	if n == nil {
		n = &v1.Node{}
		n.Name = a.opts.NodeName
		n.Labels = map[string]string{
			v1.LabelHostname: a.opts.NodeName, v1.LabelOSStable: goruntime.GOOS, v1.LabelArchStable: goruntime.GOARCH,
			labelOSBeta: goruntime.GOOS, labelArchBeta: goruntime.GOARCH,
		}
		maps.Copy(n.Labels, a.opts.Node.Labels)
	}
	alloc, err := a.currentAllocatable()
	if err != nil {
		return nil, err
	}
	if a.devices != nil {
		// The devices pods hold count as allocatable even when the node's
		// status shows fewer (held devices turned unhealthy, or a restart
		// before the plugins registered again), as upstream's
		// UpdatePluginResources counts them: the pods holding them are
		// admitted again.
		alloc = alloc.DeepCopy()
		for name, held := range a.devices.Allocated() {
			if have, ok := alloc[name]; !ok || have.Cmp(held) < 0 {
				alloc[name] = held
			}
		}
	}
	n.Status.Allocatable = alloc
	return n, nil
}

// preempt stops victim for the critical pod preemptor, as upstream's
// kubelet: a Preempting event, then a kill through the pod workers with
// the pod's own grace period, its status Failed with reason Preempting and
// a DisruptionTarget condition. It waits for the kill up to one and a half
// grace periods, at least 10s.
func (a *Agent) preempt(victim, preemptor *v1.Pod) error {
	a.events.Eventf(victim, v1.EventTypeWarning, ReasonPreempting, "%s", messagePreempted)
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if g := victim.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	timeout := max(time.Duration(grace)*time.Second*3/2, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := a.clock.AfterFunc(timeout, cancel)
	defer t.Stop()
	now := a.clock.Now()
	err := a.workers.KillPod(ctx, victim, podworkers.KillPodOptions{
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

// runtimeSupportsSupplementalGroupsPolicy tells whether the runtime's status
// reports the SupplementalGroupsPolicy feature (upstream's node status
// features.supplementalGroupsPolicy); no answer means no.
func (a *Agent) runtimeSupportsSupplementalGroupsPolicy() bool {
	return a.runtimeStatus("supplementalGroupsPolicy Strict").GetFeatures().GetSupplementalGroupsPolicy()
}
