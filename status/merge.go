package status

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// ErrIllegalTransition is wrapped by Manager.Set's error for a status that
// shows a container running again although it can never run again.
var ErrIllegalTransition = errors.New("illegal container state transition")

// checkTransition is upstream's guard: outside a pod whose restart policy is
// Always or that may restart all its containers in place
// (podspec.AllContainersCouldRestart), a terminated container (or regular
// init container) that is not to be restarted after its exit code
// (podspec.RestartsAfterExit: its rules, its own policy, the pod's) never
// leaves the terminated state.
func checkTransition(old, next *v1.PodStatus, pod *v1.Pod) error {
	spec := &pod.Spec
	if spec.RestartPolicy == v1.RestartPolicyAlways || spec.RestartPolicy == "" {
		return nil
	}
	if podspec.AllContainersCouldRestart(pod) {
		// Any container may run again: the pod may restart all of them in
		// place.
		return nil
	}
	check := func(olds, news []v1.ContainerStatus, init bool) error {
		for i := range olds {
			o := &olds[i]
			if o.State.Terminated == nil {
				continue
			}
			if init {
				c := specContainer(spec.InitContainers, o.Name)
				if c == nil {
					return fmt.Errorf("%w: init container %q has a status but no spec", ErrIllegalTransition, o.Name)
				}
				if podspec.RestartsAfterExit(pod, c, o.State.Terminated.ExitCode) {
					continue
				}
			} else if c := specContainer(spec.Containers, o.Name); c != nil && podspec.RestartsAfterExit(pod, c, o.State.Terminated.ExitCode) {
				continue
			}
			if n := findStatus(news, o.Name); n != nil && n.State.Terminated == nil {
				kind := "container"
				if init {
					kind = "init container"
				}
				return fmt.Errorf("%w: terminated %s %q cannot leave the terminated state under restart policy %s", ErrIllegalTransition, kind, o.Name, spec.RestartPolicy)
			}
		}
		return nil
	}
	if err := check(old.ContainerStatuses, next.ContainerStatuses, false); err != nil {
		return err
	}
	return check(old.InitContainerStatuses, next.InitContainerStatuses, true)
}

// normalize makes a status compare equal to itself after a round trip
// through the API server: times to whole seconds, termination messages cut
// to their share of MaxPodTerminationMessageBytes, container statuses sorted
// by name and init container statuses in spec order.
func normalize(pod *v1.Pod, s *v1.PodStatus) {
	per := MaxPodTerminationMessageBytes
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		per /= n
	}
	state := func(c *v1.ContainerState) {
		if c.Running != nil {
			c.Running.StartedAt = c.Running.StartedAt.Rfc3339Copy()
		}
		if t := c.Terminated; t != nil {
			t.StartedAt = t.StartedAt.Rfc3339Copy()
			t.FinishedAt = t.FinishedAt.Rfc3339Copy()
			if len(t.Message) > per {
				t.Message = t.Message[:per]
			}
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
	if s.StartTime != nil {
		t := s.StartTime.Rfc3339Copy()
		s.StartTime = &t
	}
	for i := range s.Conditions {
		s.Conditions[i].LastProbeTime = s.Conditions[i].LastProbeTime.Rfc3339Copy()
		s.Conditions[i].LastTransitionTime = s.Conditions[i].LastTransitionTime.Rfc3339Copy()
	}
	byName := func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) }
	slices.SortStableFunc(s.ContainerStatuses, byName)
	slices.SortStableFunc(s.EphemeralContainerStatuses, byName)
	slices.SortStableFunc(s.InitContainerStatuses, func(a, b v1.ContainerStatus) int {
		return containerIndexOrMax(pod.Spec.InitContainers, a.Name) - containerIndexOrMax(pod.Spec.InitContainers, b.Name)
	})
}

func containerIndexOrMax(cs []v1.Container, name string) int {
	if i := containerIndex(cs, name); i >= 0 {
		return i
	}
	return len(cs)
}

// isNodeCondition reports whether the status Manager writes conditions of
// type t: the owned ones and DisruptionTarget, which the node shares.
func isNodeCondition(t v1.PodConditionType) bool {
	return IsOwnedCondition(t) || t == v1.DisruptionTarget
}

// equalByNode reports whether two statuses agree on everything the node
// writes: all fields, and the conditions the node writes.
func equalByNode(a, b *v1.PodStatus) bool {
	ac, bc := a.Conditions, b.Conditions
	n := 0
	for _, c := range ac {
		if !isNodeCondition(c.Type) {
			continue
		}
		n++
		o := findCondition(bc, c.Type)
		if o == nil || !equality.Semantic.DeepEqual(c, *o) {
			return false
		}
	}
	for _, c := range bc {
		if isNodeCondition(c.Type) {
			n--
		}
	}
	if n != 0 {
		return false
	}
	ca, cb := *a, *b
	ca.Conditions, cb.Conditions = nil, nil
	return equality.Semantic.DeepEqual(ca, cb)
}

// merge returns the status to write over the sink's current status api:
// the node's status with the conditions of other writers and the resource
// claims' statuses kept, a terminal
// phase held back while containers may still run, and readiness forced
// false in a terminal phase.
func merge(api, next v1.PodStatus, couldHaveRunning bool, now metav1.Time) v1.PodStatus {
	toTerminal := !podspec.IsTerminal(api.Phase) && podspec.IsTerminal(next.Phase)
	conds := make([]v1.PodCondition, 0, len(api.Conditions)+len(next.Conditions))
	for _, c := range api.Conditions {
		if !IsOwnedCondition(c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range next.Conditions {
		switch {
		case IsOwnedCondition(c.Type):
			conds = append(conds, c)
		case c.Type == v1.DisruptionTarget && toTerminal && !couldHaveRunning:
			if o := findCondition(api.Conditions, c.Type); o == nil || o.Status != c.Status {
				c.LastTransitionTime = now
			}
			conds = replaceOrAppend(conds, c)
		}
	}
	next.Conditions = conds
	// The claims' statuses belong to the controllers that write them (the
	// resourceclaim controller, the scheduler), as upstream's status
	// manager keeps them.
	next.ResourceClaimStatuses = api.ResourceClaimStatuses
	next.ExtendedResourceClaimStatus = api.ExtendedResourceClaimStatus
	next.NodeAllocatableResourceClaimStatuses = api.NodeAllocatableResourceClaimStatuses
	if toTerminal && couldHaveRunning {
		next.Phase, next.Reason, next.Message = api.Phase, api.Reason, api.Message
	}
	if podspec.IsTerminal(next.Phase) {
		for _, t := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			if c := findCondition(next.Conditions, t); c != nil && c.Status == v1.ConditionTrue {
				tc := terminalCondition(t, next.Phase)
				tc.ObservedGeneration = c.ObservedGeneration
				tc.LastTransitionTime = now
				*c = tc
			}
		}
	}
	return next
}
