package podspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// A pod needs the node features upstream's InferForPodScheduling (1.36)
// infers, and no other.
func TestRequiredNodeFeatures(t *testing.T) {
	restartAll := v1.Container{Name: "c", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever),
		RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}}
	restart := *restartAll.DeepCopy()
	restart.RestartPolicyRules[0].Action = v1.ContainerRestartRuleActionRestart
	for _, tc := range []struct {
		name string
		spec v1.PodSpec
		want []string
	}{
		{"nothing", v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}, nil},
		{"a Restart rule", v1.PodSpec{Containers: []v1.Container{restart}}, nil},
		{"a RestartAllContainers rule", v1.PodSpec{Containers: []v1.Container{restart, restartAll}},
			[]string{"RestartAllContainersOnContainerExits"}},
		{"on an init container", v1.PodSpec{InitContainers: []v1.Container{restartAll}, Containers: []v1.Container{{Name: "app"}}},
			[]string{"RestartAllContainersOnContainerExits"}},
		{"host network", v1.PodSpec{HostNetwork: true, Containers: []v1.Container{{Name: "c"}}}, nil},
		{"host network, host users", v1.PodSpec{HostNetwork: true, HostUsers: ptr.To(true), Containers: []v1.Container{{Name: "c"}}}, nil},
		{"own user namespace", v1.PodSpec{HostUsers: ptr.To(false), Containers: []v1.Container{{Name: "c"}}}, nil},
		{"host network in its own user namespace", v1.PodSpec{HostNetwork: true, HostUsers: ptr.To(false), Containers: []v1.Container{{Name: "c"}}},
			[]string{"UserNamespacesHostNetworkSupport"}},
		{"both", v1.PodSpec{HostNetwork: true, HostUsers: ptr.To(false), Containers: []v1.Container{restartAll}},
			[]string{"RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podspec.RequiredNodeFeatures(&v1.Pod{Spec: tc.spec}))
		})
	}
}

// An update needs the node features upstream's InferForPodUpdate (1.36)
// infers: a regular init container's resources, pod-level resources.
func TestNodeFeaturesForUpdate(t *testing.T) {
	cpu := func(q string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}}
	}
	base := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), Resources: cpu("100m")},
			{Name: "setup", Resources: cpu("100m")}},
		Containers: []v1.Container{{Name: "app", Resources: cpu("100m")}},
	}}
	for _, tc := range []struct {
		name   string
		change func(p *v1.Pod)
		want   []string
	}{
		{"nothing", func(*v1.Pod) {}, nil},
		{"an app container", func(p *v1.Pod) { p.Spec.Containers[0].Resources = cpu("200m") }, nil},
		{"a sidecar", func(p *v1.Pod) { p.Spec.InitContainers[0].Resources = cpu("200m") }, nil},
		{"a regular init container", func(p *v1.Pod) { p.Spec.InitContainers[1].Resources = cpu("200m") },
			[]string{"InPlacePodVerticalScalingInitContainers"}},
		{"the same quantity spelt otherwise", func(p *v1.Pod) { p.Spec.InitContainers[1].Resources = cpu("0.1") }, nil},
		{"pod-level resources added", func(p *v1.Pod) { r := cpu("1"); p.Spec.Resources = &r },
			[]string{"InPlacePodLevelResourcesVerticalScaling"}},
		{"both", func(p *v1.Pod) { r := cpu("1"); p.Spec.Resources = &r; p.Spec.InitContainers[1].Resources = cpu("1") },
			[]string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := base.DeepCopy()
			tc.change(pod)
			assert.Equal(t, tc.want, podspec.NodeFeaturesForUpdate(base, pod))
		})
	}
}
