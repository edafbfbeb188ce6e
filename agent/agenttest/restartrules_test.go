package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// Container restart rules (upstream's ContainerRestartRules, beta and on by
// default since 1.35) on a whole node, in pods whose restartPolicy is Never.
// Each pod runs on a node of its own, so that its transcript does not
// depend on how two pods' workers interleave.

func exitWith(code int32) fake.Behavior { return fake.Behavior{Outcome: fake.Exit, ExitCode: code} }

func neverPod(name string, c v1.Container) *v1.Pod {
	p := pod(name, c)
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	return p
}

// A container whose own restartPolicy is Always keeps being restarted
// after exiting 1, with CrashLoopBackOff as under a pod's Always, and the
// pod stays Running.
func TestContainerRestartPolicyAlwaysInNeverPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{{Command: []string{"false"}, Behavior: exitWith(1)}}})
		tr := newTranscript(n)
		n.AddPod(neverPod("always", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"false"},
			RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}))
		tr.observe("always")
		tr.run(140*time.Second, "always")

		p := n.Pod("default", "always")
		assert.Equal(t, v1.PodRunning, p.Status.Phase)
		if assert.Len(t, p.Status.ContainerStatuses, 1) {
			st := p.Status.ContainerStatuses[0]
			assert.Equal(t, int32(4), st.RestartCount)
			if assert.NotNil(t, st.State.Waiting) {
				assert.Equal(t, "CrashLoopBackOff", st.State.Waiting.Reason)
			}
		}
		golden(t, "restart-policy-always.txt", tr.b.String())
	})
}

// A container with restartPolicy Never and the rule "Restart on exit 42" is
// restarted while it exits 42; once it exits 1, which no rule matches, it
// stays down and the pod is Failed, as upstream's e2e specs
// (test/e2e_node/container_restart_policy_test.go) expect.
func TestContainerRestartRuleOnExitCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{{Command: []string{"retry"}, Behavior: exitWith(42)}}})
		tr := newTranscript(n)
		n.AddPod(neverPod("rule", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"retry"},
			RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever),
			RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}))
		tr.observe("rule")
		tr.run(45*time.Second, "rule")

		p := n.Pod("default", "rule")
		assert.Equal(t, v1.PodRunning, p.Status.Phase, "exit 42 restarts")
		if assert.Len(t, p.Status.ContainerStatuses, 1) {
			assert.Equal(t, int32(3), p.Status.ContainerStatuses[0].RestartCount)
		}

		// From now on the container exits 1.
		n.Runtime().SetRules([]fake.Rule{{Command: []string{"retry"}, Behavior: exitWith(1)}})
		tr.run(60*time.Second, "rule")

		p = n.Pod("default", "rule")
		assert.Equal(t, v1.PodFailed, p.Status.Phase, "exit 1 matches no rule: the pod fails")
		if assert.Len(t, p.Status.ContainerStatuses, 1) {
			st := p.Status.ContainerStatuses[0]
			if assert.NotNil(t, st.State.Terminated) {
				assert.Equal(t, int32(1), st.State.Terminated.ExitCode)
			}
			assert.Equal(t, int32(4), st.RestartCount, "restarted after each exit 42, not after exit 1")
		}
		golden(t, "restart-rule-exit-code.txt", tr.b.String())
	})
}
