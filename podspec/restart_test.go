package podspec_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec"
)

func rule(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

var (
	in42       = rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	notIn012   = rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0, 1, 2)
	inNone     = rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn)
	notInNone  = rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn)
	allOn42    = rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	badOp42    = rule(v1.ContainerRestartRuleActionRestart, "Between", 42)
	noExitCode = v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart}
)

func restartPod(pod v1.RestartPolicy, own *v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) (*v1.Pod, *v1.Container) {
	p := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: pod, Containers: []v1.Container{{Name: "c", RestartPolicy: own, RestartPolicyRules: rules}}}}
	return p, &p.Spec.Containers[0]
}

// The cases follow upstream's ContainerShouldRestart
// (pkg/api/v1/pod/util.go) and its e2e specs (test/e2e_node
// container_restart_policy): the rules first, in order, then the
// container's policy, then the pod's.
func TestRestartsAfterExit(t *testing.T) {
	always, onFailure, never := ptr.To(v1.ContainerRestartPolicyAlways), ptr.To(v1.ContainerRestartPolicyOnFailure), ptr.To(v1.ContainerRestartPolicyNever)
	for _, tc := range []struct {
		name  string
		pod   v1.RestartPolicy
		own   *v1.ContainerRestartPolicy
		rules []v1.ContainerRestartRule
		exits map[int32]bool
	}{
		{"the pod's Always", v1.RestartPolicyAlways, nil, nil, map[int32]bool{0: true, 1: true}},
		{"the pod's empty policy is Always", "", nil, nil, map[int32]bool{0: true, 1: true}},
		{"the pod's OnFailure", v1.RestartPolicyOnFailure, nil, nil, map[int32]bool{0: false, 1: true, 137: true}},
		{"the pod's Never", v1.RestartPolicyNever, nil, nil, map[int32]bool{0: false, 1: false}},
		{"the container's Always in a Never pod", v1.RestartPolicyNever, always, nil, map[int32]bool{0: true, 1: true}},
		{"the container's OnFailure in a Never pod", v1.RestartPolicyNever, onFailure, nil, map[int32]bool{0: false, 1: true}},
		{"the container's Never in an Always pod", v1.RestartPolicyAlways, never, nil, map[int32]bool{0: false, 1: false}},
		{"an empty container policy falls back to the pod's", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicy("")), nil, map[int32]bool{0: false, 1: false}},
		{"restart on 42 only", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{in42}, map[int32]bool{0: false, 1: false, 42: true}},
		{"restart on 42, else OnFailure", v1.RestartPolicyNever, onFailure, []v1.ContainerRestartRule{in42}, map[int32]bool{0: false, 1: true, 42: true}},
		{"NotIn restarts on codes not listed", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{notIn012}, map[int32]bool{0: false, 1: false, 2: false, 3: true, 42: true}},
		{"In with no values matches nothing", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{inNone}, map[int32]bool{0: false, 42: false}},
		{"NotIn with no values matches every code", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{notInNone}, map[int32]bool{0: true, 42: true}},
		{"rules are read only with a container policy", v1.RestartPolicyNever, nil, []v1.ContainerRestartRule{in42}, map[int32]bool{42: false}},
		{"a rule cannot keep down a container its policy restarts", v1.RestartPolicyNever, always, []v1.ContainerRestartRule{in42}, map[int32]bool{1: true, 42: true}},
		{"RestartAllContainers restarts (the whole pod)", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{allOn42}, map[int32]bool{0: false, 1: false, 42: true}},
		{"the first matching rule decides", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{allOn42, in42}, map[int32]bool{42: true}},
		{"a later rule matches when an earlier does not", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{notInNone, in42}, map[int32]bool{1: true}},
		{"an unknown operator never matches", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{badOp42, in42}, map[int32]bool{42: true, 1: false}},
		{"a rule without exit codes never matches", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{noExitCode}, map[int32]bool{1: false}},
	} {
		for code, want := range tc.exits {
			t.Run(fmt.Sprintf("%s/exit=%d", tc.name, code), func(t *testing.T) {
				pod, c := restartPod(tc.pod, tc.own, tc.rules...)
				assert.Equal(t, want, podspec.RestartsAfterExit(pod, c, code))
			})
		}
	}
}

// RestartsAllContainers is upstream's match of a RestartAllContainers rule
// (ShouldAllContainersRestart, getContainersToReset): the first rule whose
// exit codes match decides.
func TestRestartsAllContainers(t *testing.T) {
	never, always := ptr.To(v1.ContainerRestartPolicyNever), ptr.To(v1.ContainerRestartPolicyAlways)
	for _, tc := range []struct {
		name  string
		own   *v1.ContainerRestartPolicy
		rules []v1.ContainerRestartRule
		exits map[int32]bool
	}{
		{"no rules", never, nil, map[int32]bool{0: false, 42: false}},
		{"a RestartAllContainers rule on 42", never, []v1.ContainerRestartRule{allOn42}, map[int32]bool{0: false, 1: false, 42: true}},
		{"on a sidecar's exit", always, []v1.ContainerRestartRule{allOn42}, map[int32]bool{1: false, 42: true}},
		{"a Restart rule only", never, []v1.ContainerRestartRule{in42}, map[int32]bool{42: false}},
		{"an earlier Restart rule wins", never, []v1.ContainerRestartRule{in42, allOn42}, map[int32]bool{42: false}},
		{"an earlier rule that does not match", never, []v1.ContainerRestartRule{inNone, allOn42}, map[int32]bool{42: true}},
		{"NotIn", never, []v1.ContainerRestartRule{rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)}, map[int32]bool{0: false, 3: true}},
	} {
		for code, want := range tc.exits {
			t.Run(fmt.Sprintf("%s/exit=%d", tc.name, code), func(t *testing.T) {
				_, c := restartPod(v1.RestartPolicyNever, tc.own, tc.rules...)
				assert.Equal(t, want, podspec.RestartsAllContainers(c, code))
			})
		}
	}
}

func TestAllContainersCouldRestart(t *testing.T) {
	never := ptr.To(v1.ContainerRestartPolicyNever)
	pod, _ := restartPod(v1.RestartPolicyNever, never, in42)
	assert.False(t, podspec.AllContainersCouldRestart(pod), "a Restart rule")
	pod, _ = restartPod(v1.RestartPolicyNever, never, in42, allOn42)
	assert.True(t, podspec.AllContainersCouldRestart(pod), "whatever the exit codes")
	pod, _ = restartPod(v1.RestartPolicyNever, nil)
	pod.Spec.InitContainers = []v1.Container{{Name: "init", RestartPolicy: never, RestartPolicyRules: []v1.ContainerRestartRule{allOn42}}}
	assert.True(t, podspec.AllContainersCouldRestart(pod), "an init container's rule")
}

func TestRestartsAfterKill(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  v1.RestartPolicy
		own  *v1.ContainerRestartPolicy
		want bool
	}{
		{"the pod's Always", v1.RestartPolicyAlways, nil, true},
		{"the pod's OnFailure", v1.RestartPolicyOnFailure, nil, true},
		{"the pod's Never", v1.RestartPolicyNever, nil, false},
		{"the container's Always in a Never pod", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyAlways), true},
		{"the container's OnFailure in a Never pod", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyOnFailure), true},
		{"the container's Never in an Always pod", v1.RestartPolicyAlways, ptr.To(v1.ContainerRestartPolicyNever), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, c := restartPod(tc.pod, tc.own, in42)
			if tc.own == nil {
				c.RestartPolicyRules = nil
			}
			assert.Equal(t, tc.want, podspec.RestartsAfterKill(pod, c), "rules are not read: no exit code")
		})
	}
}

func TestMayRestart(t *testing.T) {
	never := ptr.To(v1.ContainerRestartPolicyNever)
	for _, tc := range []struct {
		name  string
		pod   v1.RestartPolicy
		own   *v1.ContainerRestartPolicy
		rules []v1.ContainerRestartRule
		want  bool
	}{
		{"a Never pod runs once", v1.RestartPolicyNever, nil, nil, false},
		{"an OnFailure pod", v1.RestartPolicyOnFailure, nil, nil, true},
		{"the container's Always", v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyAlways), nil, true},
		{"the container's Never", v1.RestartPolicyAlways, never, nil, false},
		{"the container's Never with a Restart rule", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{in42}, true},
		{"the container's Never with only a RestartAllContainers rule", v1.RestartPolicyNever, never, []v1.ContainerRestartRule{allOn42}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, c := restartPod(tc.pod, tc.own, tc.rules...)
			assert.Equal(t, tc.want, podspec.MayRestart(pod, c))
		})
	}
}

func TestRunsOnce(t *testing.T) {
	pod, _ := restartPod(v1.RestartPolicyNever, nil)
	assert.True(t, podspec.RunsOnce(pod))
	pod, _ = restartPod(v1.RestartPolicyOnFailure, nil)
	assert.False(t, podspec.RunsOnce(pod))
	pod, _ = restartPod(v1.RestartPolicyNever, ptr.To(v1.ContainerRestartPolicyNever), in42)
	assert.False(t, podspec.RunsOnce(pod), "a rule may restart the container")
	pod, _ = restartPod(v1.RestartPolicyNever, nil)
	pod.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}}
	assert.True(t, podspec.RunsOnce(pod), "a sidecar's restarts do not count")
}
