package admission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/admission"
)

func TestSupplementalGroupsPolicy(t *testing.T) {
	withPolicy := func(p v1.SupplementalGroupsPolicy) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SupplementalGroupsPolicy: &p}}}
	}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		supported bool
		refused   bool
	}{
		{name: "no security context", pod: &v1.Pod{}},
		{name: "no policy", pod: &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{}}}},
		{name: "Merge, the runtime's own way", pod: withPolicy(v1.SupplementalGroupsPolicyMerge)},
		{name: "Strict where the runtime supports it", pod: withPolicy(v1.SupplementalGroupsPolicyStrict), supported: true},
		{name: "Strict where it does not", pod: withPolicy(v1.SupplementalGroupsPolicyStrict), refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			ok, reason, msg := admission.SupplementalGroupsPolicy(func() bool { asked = true; return tc.supported }).Admit(tc.pod, nil)
			assert.Equal(t, !tc.refused, ok)
			if tc.refused {
				assert.Equal(t, admission.ReasonSupplementalGroupsPolicyNotSupported, reason)
				assert.Equal(t, "SupplementalGroupsPolicy=Strict is not supported in this node", msg)
			}
			isStrict := tc.pod.Spec.SecurityContext != nil && tc.pod.Spec.SecurityContext.SupplementalGroupsPolicy != nil &&
				*tc.pod.Spec.SecurityContext.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict
			assert.Equal(t, isStrict, asked, "the runtime is asked only for Strict")
		})
	}
}

func TestSupplementalGroupsPolicyWithoutAnAnswer(t *testing.T) {
	strict := v1.SupplementalGroupsPolicyStrict
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}}}
	ok, reason, _ := admission.SupplementalGroupsPolicy(nil).Admit(pod, nil)
	assert.False(t, ok)
	assert.Equal(t, admission.ReasonSupplementalGroupsPolicyNotSupported, reason)
}
