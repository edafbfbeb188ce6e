package admission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// With the PodLevelResources gate off, upstream's kubelet refuses a pod
// that sets pod-level resources (it would ignore them); every other pod,
// and every pod with the gate on, is admitted.
func TestPodLevelResources(t *testing.T) {
	withPodLevel := func(l v1.ResourceList) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Resources: &v1.ResourceRequirements{Limits: l}}}
	}
	cpu := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	for _, tc := range []struct {
		name    string
		enabled bool
		pod     *v1.Pod
		ok      bool
	}{
		{"gate off, pod-level cpu limit", false, withPodLevel(cpu), false},
		{"gate off, no spec.resources", false, &v1.Pod{}, true},
		{"gate off, empty spec.resources", false, withPodLevel(nil), true},
		{"gate off, only a resource a pod may not set", false, withPodLevel(v1.ResourceList{"example.com/gpu": resource.MustParse("1")}), true},
		{"gate on, pod-level cpu limit", true, withPodLevel(cpu), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, message := admission.PodLevelResources{Enabled: tc.enabled}.Admit(tc.pod, nil)
			assert.Equal(t, tc.ok, ok)
			if !tc.ok {
				assert.Equal(t, "PodLevelResourcesNotSupported", reason)
				assert.Equal(t, "PodLevelResources feature gate is disabled", message)
			}
		})
	}
}
