package status

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri"
)

// restartAllOn42 is the one rule "RestartAllContainers when the exit code
// is 42".
func restartAllOn42(c v1.Container) v1.Container {
	c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
	c.RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	return c
}

// summary is a status as the steps below read it: phase, the
// AllContainersRestarting and Initialized conditions, then each
// container's state, restart count and last termination.
func summary(s v1.PodStatus) string {
	var b strings.Builder
	b.WriteString(string(s.Phase))
	for _, t := range []v1.PodConditionType{v1.AllContainersRestarting, v1.PodInitialized} {
		c := cond(s, t)
		if c == nil {
			fmt.Fprintf(&b, " %s=none", t)
			continue
		}
		fmt.Fprintf(&b, " %s=%s", t, c.Status)
		if c.Reason != "" {
			fmt.Fprintf(&b, "(%s)", c.Reason)
		}
	}
	for _, cs := range append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		fmt.Fprintf(&b, " %s=", cs.Name)
		switch {
		case cs.State.Running != nil:
			b.WriteString("running")
		case cs.State.Terminated != nil:
			fmt.Fprintf(&b, "terminated(%s,%d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		case cs.State.Waiting != nil:
			fmt.Fprintf(&b, "waiting(%s)", cs.State.Waiting.Reason)
		}
		fmt.Fprintf(&b, "[%d", cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			fmt.Fprintf(&b, ",last=%s/%d", t.Reason, t.ExitCode)
		}
		b.WriteString("]")
	}
	return b.String()
}

// A pod restarting all its containers in place, step by step, as upstream's
// generateAPIPodStatus shows it (RestartAllContainersOnContainerExits):
// AllContainersRestarting is True from the exit of src (rule
// RestartAllContainers on 42) until the runtime holds none of the pod's
// containers; the removed containers wait as RestartingAllContainers with
// one more restart, and the pod stays Running (Pending while its init
// container runs again) and Initialized.
func TestGenerateRestartAllContainers(t *testing.T) {
	pod := mkPod(v1.RestartPolicyNever, []v1.Container{ctr("init"), sidecar("side")}, restartAllOn42(ctr("src")), ctr("app"))
	steps := []struct {
		what string
		rt   *cri.PodStatus
		want string
	}{
		{"running", rt(running("app", "a1", 3, 0), running("src", "c1", 3, 0), running("side", "s1", 2, 0), exited("init", "i1", 1, 0, 0, "Completed")),
			"Running AllContainersRestarting=False Initialized=True init=terminated(Completed,0)[0] side=running[0] app=running[0] src=running[0]"},
		{"src exits 42", rt(running("app", "a1", 3, 0), exited("src", "c1", 3, 0, 42, "Error"), running("side", "s1", 2, 0), exited("init", "i1", 1, 0, 0, "Completed")),
			"Running AllContainersRestarting=True(RestartAllContainersStarted) Initialized=True init=terminated(Completed,0)[0] side=running[0] app=running[0] src=terminated(Error,42)[0]"},
		{"every container removed", rt(),
			"Running AllContainersRestarting=False Initialized=True init=waiting(RestartingAllContainers)[1,last=RestartingAllContainers/137] side=waiting(RestartingAllContainers)[1,last=RestartingAllContainers/137] app=waiting(RestartingAllContainers)[1,last=RestartingAllContainers/137] src=waiting(RestartingAllContainers)[1,last=RestartingAllContainers/137]"},
		{"the next sync", rt(),
			"Running AllContainersRestarting=False Initialized=True init=waiting(PodInitializing)[1,last=RestartingAllContainers/137] side=waiting(PodInitializing)[1,last=RestartingAllContainers/137] app=waiting(PodInitializing)[1,last=RestartingAllContainers/137] src=waiting(PodInitializing)[1,last=RestartingAllContainers/137]"},
		{"init runs again", rt(running("init", "i2", 10, 1)),
			"Pending AllContainersRestarting=False Initialized=True init=running[1,last=RestartingAllContainers/137] side=waiting(PodInitializing)[1,last=RestartingAllContainers/137] app=waiting(PodInitializing)[1,last=RestartingAllContainers/137] src=waiting(PodInitializing)[1,last=RestartingAllContainers/137]"},
		{"all running again", rt(running("app", "a2", 13, 1), running("src", "c2", 13, 1), running("side", "s2", 12, 1), exited("init", "i2", 10, 1, 0, "Completed")),
			"Running AllContainersRestarting=False Initialized=True init=terminated(Completed,0)[1,last=RestartingAllContainers/137] side=running[1,last=RestartingAllContainers/137] app=running[1,last=RestartingAllContainers/137] src=running[1,last=RestartingAllContainers/137]"},
	}
	var old *v1.PodStatus
	for i, step := range steps {
		s, err := Generate(Input{Pod: pod, Runtime: step.rt, Old: old, Now: at(20 + i)})
		require.NoError(t, err)
		assert.Equal(t, step.want, summary(s), step.what)
		if c := cond(s, v1.AllContainersRestarting); assert.NotNil(t, c) {
			assert.Zero(t, c.ObservedGeneration, "no observedGeneration, as upstream")
			if c.Status == v1.ConditionTrue {
				assert.Equal(t, "container exited with restart policy rule", c.Message)
			}
		}
		if i == 2 {
			w := status(s, "src").State.Waiting
			assert.Equal(t, "The container is removed because RestartAllContainers in place", w.Message)
		}
		old = &s
	}
}

// A terminal pod does not restart; a pod without a RestartAllContainers
// rule has no AllContainersRestarting condition.
func TestAllContainersRestartingCondition(t *testing.T) {
	pod := mkPod(v1.RestartPolicyNever, nil, restartAllOn42(ctr("src")))
	r := rt(exited("src", "c1", 1, 0, 42, "Error"))
	assert.Equal(t, v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse, Reason: ReasonPodFailed},
		AllContainersRestartingCondition(pod, r, nil, v1.PodFailed))
	assert.Equal(t, v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse, Reason: ReasonPodCompleted},
		AllContainersRestartingCondition(pod, r, nil, v1.PodSucceeded))
	assert.Equal(t, v1.ConditionTrue, AllContainersRestartingCondition(pod, r, nil, v1.PodRunning).Status)
	assert.Equal(t, v1.ConditionFalse, AllContainersRestartingCondition(pod, rt(exited("src", "c1", 1, 0, 1, "Error")), nil, v1.PodRunning).Status)
	// The last status says so, or shows src terminated by 42, and the
	// runtime still holds a container: True.
	old := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "src", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 42}}}}}
	assert.Equal(t, v1.ConditionTrue, AllContainersRestartingCondition(pod, rt(running("src", "c2", 2, 1)), old, v1.PodRunning).Status)
	assert.Equal(t, v1.ConditionFalse, AllContainersRestartingCondition(pod, rt(), old, v1.PodRunning).Status, "nothing left to remove")

	s, err := Generate(Input{Pod: mkPod(v1.RestartPolicyNever, nil, ctr("a")), Runtime: rt(running("a", "a1", 1, 0)), Now: at(2)})
	require.NoError(t, err)
	assert.Nil(t, cond(s, v1.AllContainersRestarting))
	assert.True(t, IsOwnedCondition(v1.AllContainersRestarting))
	assert.True(t, AllContainersRestarting(&v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}}))
}

// A pod that may restart all its containers lets any of them leave the
// terminated state, as upstream's checkContainerStateTransition.
func TestCheckTransitionRestartAllContainers(t *testing.T) {
	pod := mkPod(v1.RestartPolicyNever, nil, restartAllOn42(ctr("src")), ctr("app"))
	terminated := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}}}}
	runningAgain := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	assert.NoError(t, checkTransition(terminated, runningAgain, pod))
	pod.Spec.Containers[0].RestartPolicyRules = nil
	assert.ErrorIs(t, checkTransition(terminated, runningAgain, pod), ErrIllegalTransition)
}
