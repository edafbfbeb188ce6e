package admission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/admission"
)

// A pod needing a node feature the node does not declare is refused with
// upstream's reason and message; one the node declares, or a pod needing
// none, is admitted.
func TestNodeFeatures(t *testing.T) {
	restartAll := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever),
		RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}}
	both := restartAll.DeepCopy()
	both.Spec.HostNetwork, both.Spec.HostUsers = true, ptr.To(false)
	plain := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	for _, tc := range []struct {
		name     string
		declared admission.NodeFeatures
		pod      *v1.Pod
		message  string // "" admitted
	}{
		{"needs nothing", nil, plain, ""},
		{"needs an undeclared feature", admission.NodeFeatures{"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers"}, restartAll,
			"Pod requires node features that are not available: RestartAllContainersOnContainerExits"},
		{"needs a declared feature", admission.NodeFeatures{"RestartAllContainersOnContainerExits"}, restartAll, ""},
		{"needs two, one declared", admission.NodeFeatures{"RestartAllContainersOnContainerExits"}, both,
			"Pod requires node features that are not available: UserNamespacesHostNetworkSupport"},
		{"needs two, none declared", nil, both,
			"Pod requires node features that are not available: RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, message := tc.declared.Admit(tc.pod, nil)
			if tc.message == "" {
				assert.True(t, ok)
				assert.Empty(t, reason)
				return
			}
			assert.False(t, ok)
			assert.Equal(t, admission.ReasonPodFeatureUnsupported, reason)
			assert.Equal(t, tc.message, message)
		})
	}
}
