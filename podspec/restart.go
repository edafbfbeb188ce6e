package podspec

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// The restart decision of a container, as upstream decides it with the
// ContainerRestartRules feature (beta and on by default since 1.35) and
// RestartAllContainersOnContainerExits (beta and on by default since 1.36).
// A container's own restartPolicy (and, with it, its restartPolicyRules)
// overrides the pod's for that container alone: a Never pod may keep
// restarting one container, an Always pod may let one container stay down,
// and a rule with action RestartAllContainers restarts the whole pod in
// place. Each kubelet block asks these functions and never reads
// pod.Spec.RestartPolicy to decide a restart.

// RestartsAfterExit reports whether c, a container of pod whose latest
// instance exited with exitCode, is to be started again. Only when c sets
// its own restartPolicy are its restartPolicyRules read, in order: the
// first rule whose exitCodes match decides, and both of its actions
// restart: Restart the container alone, RestartAllContainers every
// container of the pod (RestartsAllContainers says which). When no rule
// decides, c's own policy applies (Always: yes, OnFailure: a non-zero
// exit, Never: no), else the pod's (empty means Always).
//
// A sidecar (restartPolicy Always) is always restarted. For a regular init
// container the same decision is upstream's: its exit 0 lets the next one
// start instead, so callers ask only about failed init containers.
func RestartsAfterExit(pod *v1.Pod, c *v1.Container, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if r := matchingRule(c, exitCode); r != nil {
			switch r.Action {
			case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
				return true
			}
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// RestartsAfterKill reports whether c is started again after the kubelet
// killed it while it ran (a failed liveness or startup probe): no exit code
// is known, so no rule is read; c's own policy decides when it has one, else
// the pod's, and only Never keeps the container down.
func RestartsAfterKill(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy != nil && *c.RestartPolicy != "" {
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

// MayRestart reports whether c can be restarted at all, whatever its exit
// code: its own policy is not Never or one of its rules has action
// Restart, or, when it has no policy of its own, the pod's is not Never.
// A Never pod none of whose containers may restart runs once. As
// upstream's IsContainerRestartable, a RestartAllContainers rule does not
// count: such a pod restarts in its sandbox, never in a new one.
func MayRestart(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy != nil {
		for _, r := range c.RestartPolicyRules {
			if r.Action == v1.ContainerRestartRuleActionRestart {
				return true
			}
		}
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

// matchingRule returns c's first rule whose exit codes match exitCode: In
// matches a listed code, NotIn any other. A rule without exitCodes, or with
// an unknown operator, never matches.
func matchingRule(c *v1.Container, exitCode int32) *v1.ContainerRestartRule {
	for i := range c.RestartPolicyRules {
		r := &c.RestartPolicyRules[i]
		if r.ExitCodes == nil {
			continue
		}
		listed := slices.Contains(r.ExitCodes.Values, exitCode)
		switch r.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if listed {
				return r
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !listed {
				return r
			}
		}
	}
	return nil
}

// RunsOnce reports whether pod never restarts a regular container: its
// restartPolicy is Never and no container's own policy or rules may
// restart it. Such a pod whose sandbox is gone is not given a new one, and
// its cgroup is not made again once its containers were killed.
func RunsOnce(pod *v1.Pod) bool {
	if pod.Spec.RestartPolicy != v1.RestartPolicyNever {
		return false
	}
	for i := range pod.Spec.Containers {
		if MayRestart(pod, &pod.Spec.Containers[i]) {
			return false
		}
	}
	return true
}

// RestartsAllContainers reports whether c's exit with exitCode restarts
// every container of its pod in place (upstream's
// RestartAllContainersOnContainerExits): the first of c's
// restartPolicyRules whose exitCodes match exitCode has action
// RestartAllContainers (the API server accepts rules only beside a
// container's own restartPolicy). The kubelet then kills and removes every
// container of the pod, init containers included, and runs the pod again
// from its first init container in the same sandbox.
func RestartsAllContainers(c *v1.Container, exitCode int32) bool {
	r := matchingRule(c, exitCode)
	return r != nil && r.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// AllContainersCouldRestart reports whether any container or init
// container of pod has a rule with action RestartAllContainers, whatever
// its exit codes (upstream's AllContainersCouldRestart): such a pod's
// status carries the AllContainersRestarting condition, and any of its
// containers may leave the terminated state.
func AllContainersCouldRestart(pod *v1.Pod) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			for _, r := range list[i].RestartPolicyRules {
				if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}
