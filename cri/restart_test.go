package cri_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestShouldStartContainer(t *testing.T) {
	inst := func(state runtimeapi.ContainerState, exit int32) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{State: state, ExitCode: exit}
	}
	on42 := v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
	for _, tc := range []struct {
		name    string
		policy  v1.RestartPolicy
		own     *v1.ContainerRestartPolicy
		latest  *runtimeapi.ContainerStatus
		deleted bool
		want    bool
	}{
		{"never created", v1.RestartPolicyNever, nil, nil, false, true},
		{"running", v1.RestartPolicyAlways, nil, inst(runtimeapi.ContainerState_CONTAINER_RUNNING, 0), false, false},
		{"created, never started", v1.RestartPolicyNever, nil, inst(runtimeapi.ContainerState_CONTAINER_CREATED, 0), false, true},
		{"unknown", v1.RestartPolicyNever, nil, inst(runtimeapi.ContainerState_CONTAINER_UNKNOWN, 0), false, true},
		{"exited under Never", v1.RestartPolicyNever, nil, inst(runtimeapi.ContainerState_CONTAINER_EXITED, 1), false, false},
		{"exited 1 under Never, container Always", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyAlways), inst(runtimeapi.ContainerState_CONTAINER_EXITED, 1), false, true},
		{"exited 42 under Never, rule on 42", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyNever), inst(runtimeapi.ContainerState_CONTAINER_EXITED, 42), false, true},
		{"exited 1 under Never, rule on 42", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyNever), inst(runtimeapi.ContainerState_CONTAINER_EXITED, 1), false, false},
		{"a deleted pod starts nothing", v1.RestartPolicyAlways, nil, nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := v1.Container{Name: "c", RestartPolicy: tc.own}
			if tc.own != nil {
				c.RestartPolicyRules = []v1.ContainerRestartRule{on42}
			}
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.policy, Containers: []v1.Container{c}}}
			if tc.deleted {
				pod.DeletionTimestamp = ptr.To(metav1.Now())
			}
			assert.Equal(t, tc.want, cri.ShouldStartContainer(pod, &pod.Spec.Containers[0], tc.latest))
		})
	}
}
