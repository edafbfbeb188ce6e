package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestAdmitSupplementalGroupsPolicy(t *testing.T) {
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
			ok, reason, msg := admitSupplementalGroupsPolicy(tc.pod, func() bool { asked = true; return tc.supported })
			assert.Equal(t, !tc.refused, ok)
			if tc.refused {
				assert.Equal(t, "SupplementalGroupsPolicyNotSupported", reason)
				assert.Equal(t, "SupplementalGroupsPolicy=Strict is not supported in this node", msg)
			}
			isStrict := tc.pod.Spec.SecurityContext != nil && tc.pod.Spec.SecurityContext.SupplementalGroupsPolicy != nil &&
				*tc.pod.Spec.SecurityContext.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict
			assert.Equal(t, isStrict, asked, "the runtime is asked only for Strict")
		})
	}
}
