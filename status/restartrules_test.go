package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Container restart rules in the pod's phase, as upstream's getPhase with
// the ContainerRestartRules feature (on by default since 1.35): a pod whose
// stopped container will be restarted is Running, not Failed or Succeeded;
// an init container that failed and will not restart fails the pod.
func TestGeneratePhaseContainerRestartRules(t *testing.T) {
	// c is a container named name with its own restart policy and, when
	// codes are given, the rule "Restart on these exit codes".
	c := func(name string, policy v1.ContainerRestartPolicy, codes ...int32) v1.Container {
		r := ctr(name)
		r.RestartPolicy = &policy
		if len(codes) > 0 {
			r.RestartPolicyRules = restartOn(codes...)
		}
		return r
	}
	crash := map[string]v1.ContainerStateWaiting{"a": {Reason: "CrashLoopBackOff"}, "init": {Reason: "CrashLoopBackOff"}}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		rt       *cri.PodStatus
		terminal bool
		want     v1.PodPhase
		// waiting: the container a shows waiting to restart, not terminated
		// (not checked for a terminal pod).
		waiting bool
	}{
		{"Never pod, container Always, exit 1: Running", mkPod(v1.RestartPolicyNever, nil, c("a", v1.ContainerRestartPolicyAlways)),
			rt(exited("a", "a1", 1, 0, 1, "Error")), false, v1.PodRunning, true},
		{"Never pod, container Always, exit 0: Running", mkPod(v1.RestartPolicyNever, nil, c("a", v1.ContainerRestartPolicyAlways)),
			rt(exited("a", "a1", 1, 0, 0, "Completed")), false, v1.PodRunning, true},
		{"Never pod, rule on 42, exit 42: Running", mkPod(v1.RestartPolicyNever, nil, c("a", v1.ContainerRestartPolicyNever, 42)),
			rt(exited("a", "a1", 1, 0, 42, "Error")), false, v1.PodRunning, true},
		{"Never pod, rule on 42, exit 1: Failed", mkPod(v1.RestartPolicyNever, nil, c("a", v1.ContainerRestartPolicyNever, 42)),
			rt(exited("a", "a1", 1, 2, 1, "Error")), false, v1.PodFailed, false},
		{"Never pod, rule on 42, exit 0: Succeeded", mkPod(v1.RestartPolicyNever, nil, c("a", v1.ContainerRestartPolicyNever, 42)),
			rt(exited("a", "a1", 1, 0, 0, "Completed")), false, v1.PodSucceeded, false},
		{"Always pod, container Never, exit 1: Failed", mkPod(v1.RestartPolicyAlways, nil, c("a", v1.ContainerRestartPolicyNever)),
			rt(exited("a", "a1", 1, 0, 1, "Error")), false, v1.PodFailed, false},
		{"Always pod, container OnFailure, exit 0: Succeeded", mkPod(v1.RestartPolicyAlways, nil, c("a", v1.ContainerRestartPolicyOnFailure)),
			rt(exited("a", "a1", 1, 0, 0, "Completed")), false, v1.PodSucceeded, false},
		{"Never pod, one done, one restarting: Running", mkPod(v1.RestartPolicyNever, nil, c("a", v1.ContainerRestartPolicyAlways), ctr("b")),
			rt(exited("a", "a1", 2, 0, 1, "Error"), exited("b", "b1", 1, 0, 1, "Error")), false, v1.PodRunning, true},
		{"a terminal pod does not restart: Failed", mkPod(v1.RestartPolicyNever, nil, c("a", v1.ContainerRestartPolicyAlways)),
			rt(exited("a", "a1", 1, 0, 1, "Error")), true, v1.PodFailed, false},
		{"Never pod, init rule on 42, exit 42: Pending", mkPod(v1.RestartPolicyNever, []v1.Container{c("init", v1.ContainerRestartPolicyNever, 42)}, ctr("a")),
			rt(exited("init", "i1", 1, 0, 42, "Error")), false, v1.PodPending, false},
		{"Never pod, init rule on 42, exit 1: Failed", mkPod(v1.RestartPolicyNever, []v1.Container{c("init", v1.ContainerRestartPolicyNever, 42)}, ctr("a")),
			rt(exited("init", "i1", 1, 0, 1, "Error")), false, v1.PodFailed, false},
		{"Always pod, init Never, exit 1: Failed", mkPod(v1.RestartPolicyAlways, []v1.Container{c("init", v1.ContainerRestartPolicyNever)}, ctr("a")),
			rt(exited("init", "i1", 1, 0, 1, "Error")), false, v1.PodFailed, false},
		{"Never pod, init OnFailure, exit 1: Pending", mkPod(v1.RestartPolicyNever, []v1.Container{c("init", v1.ContainerRestartPolicyOnFailure)}, ctr("a")),
			rt(exited("init", "i1", 1, 0, 1, "Error")), false, v1.PodPending, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Generate(Input{Pod: tc.pod, Runtime: tc.rt, PodIsTerminal: tc.terminal, Waiting: waitingReasons(crash), Now: at(100)})
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.Phase)
			for _, st := range s.ContainerStatuses {
				if tc.terminal {
					break
				}
				if st.Name != "a" || st.State.Running != nil || (st.State.Waiting != nil && st.LastTerminationState.Terminated == nil) {
					continue
				}
				assert.Equal(t, tc.waiting, st.State.Waiting != nil, "a waiting to restart")
			}
		})
	}
}

// The transition guard lets a container its rules restart leave the
// terminated state, and keeps one they do not.
func TestCheckTransitionContainerRestartRules(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	a := ctr("a")
	a.RestartPolicy, a.RestartPolicyRules = &never, restartOn(42)
	pod := mkPod(v1.RestartPolicyNever, nil, a)
	terminated := func(code int32) *v1.PodStatus {
		return &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}}}
	}
	runningAgain := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	assert.NoError(t, checkTransition(terminated(42), runningAgain, pod))
	assert.ErrorIs(t, checkTransition(terminated(1), runningAgain, pod), ErrIllegalTransition)
}

// restartOn is the one rule "Restart when the exit code is one of codes".
func restartOn(codes ...int32) []v1.ContainerRestartRule {
	return []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: codes}}}
}
