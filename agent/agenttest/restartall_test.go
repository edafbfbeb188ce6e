package agenttest_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// RestartAllContainers (upstream's RestartAllContainersOnContainerExits,
// beta and on by default since 1.36), as upstream's e2e spec "should
// restart all containers on regular container exit"
// (test/e2e/common/node/container_restart_policy.go): a Never pod with an
// init container, a sidecar, a container whose rule restarts all
// containers on exit 42, and another container. When src exits 42 the pod
// says AllContainersRestarting, every container is killed without grace
// and removed, and the pod runs again from its init container in the same
// sandbox, every container with one restart and a last termination
// RestartingAllContainers. Another pod on the node is not touched.
func TestRestartAllContainersOnExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// regular ignores SIGTERM: the kill without grace takes upstream's
		// minimum of 2s, during which the pod says AllContainersRestarting.
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{{Command: []string{"true"}, Behavior: exitWith(0)},
			{Name: "regular", Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}}}})
		tr := newTranscript(n)
		never := ptr.To(v1.ContainerRestartPolicyNever)
		p := pod("restart", v1.Container{Name: "src", Image: "busybox:1.36", Command: []string{"serve"}, RestartPolicy: never,
			RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}},
			v1.Container{Name: "regular", Image: "busybox:1.36", Command: []string{"serve"}})
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.InitContainers = []v1.Container{
			{Name: "init", Image: "busybox:1.36", Command: []string{"true"}},
			{Name: "sidecar", Image: "busybox:1.36", Command: []string{"serve"}, RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)},
		}
		n.AddPod(p)
		n.AddPod(pod("bystander", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"serve"}}))
		tr.observe("restart", "bystander")
		tr.run(5*time.Second, "restart", "bystander")
		sandboxes := len(n.Runtime().CallsOf(fake.RunPodSandbox))
		bystander := containerID(n.Pod("default", "bystander"), "app")

		require.NoError(t, n.Runtime().ExitContainer(trimID(containerID(n.Pod("default", "restart"), "src")), 42, "Error"))
		tr.run(10*time.Second, "restart", "bystander")

		got := n.Pod("default", "restart")
		assert.Equal(t, v1.PodRunning, got.Status.Phase)
		for _, cs := range append(got.Status.InitContainerStatuses, got.Status.ContainerStatuses...) {
			assert.Equal(t, int32(1), cs.RestartCount, cs.Name)
			if assert.NotNil(t, cs.LastTerminationState.Terminated, cs.Name) {
				assert.Equal(t, "RestartingAllContainers", cs.LastTerminationState.Terminated.Reason, cs.Name)
			}
			if cs.Name == "init" {
				assert.NotNil(t, cs.State.Terminated, "init ran again")
			} else {
				assert.NotNil(t, cs.State.Running, cs.Name)
			}
		}
		for _, c := range got.Status.Conditions {
			if c.Type == v1.AllContainersRestarting {
				assert.Equal(t, v1.ConditionFalse, c.Status)
			}
		}
		assert.Equal(t, sandboxes, len(n.Runtime().CallsOf(fake.RunPodSandbox)), "the same sandbox")
		assert.Equal(t, bystander, containerID(n.Pod("default", "bystander"), "app"), "the other pod is not touched")
		golden(t, "restart-all-containers.txt", tr.b.String())
	})
}

func containerID(p *v1.Pod, name string) string {
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs.ContainerID
		}
	}
	return ""
}

// trimID is a status's container ID without its "runtime://".
func trimID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}
