package podspec

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// The restart decision of a container, as upstream decides it with the
// ContainerRestartRules feature (beta and on by default since 1.35). A
// container's own restartPolicy (and, with it, its restartPolicyRules)
// overrides the pod's for that container alone: a Never pod may keep
// restarting one container, an Always pod may let one container stay down.
// Each kubelet block asks these three functions and never reads
// pod.Spec.RestartPolicy to decide a restart.

// RestartsAfterExit reports whether c, a container of pod whose latest
// instance exited with exitCode, is to be started again. Only when c sets
// its own restartPolicy are its restartPolicyRules read, in order: the
// first rule whose exitCodes match decides, and a Restart action restarts
// (a matching rule with another action, such as RestartAllContainers, falls
// through to the policy, as upstream's single-container decision does).
// When no rule decides, c's own policy applies (Always: yes, OnFailure: a
// non-zero exit, Never: no), else the pod's (empty means Always).
//
// A sidecar (restartPolicy Always) is always restarted. For a regular init
// container the same decision is upstream's: its exit 0 lets the next one
// start instead, so callers ask only about failed init containers.
func RestartsAfterExit(pod *v1.Pod, c *v1.Container, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if r := matchingRule(c, exitCode); r != nil && r.Action == v1.ContainerRestartRuleActionRestart {
			return true
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
// code: its own policy is not Never or one of its rules restarts, or, when
// it has no policy of its own, the pod's is not Never. A Never pod none of
// whose containers may restart runs once.
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
