package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmitOS(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		reason string // "" means admitted
	}{
		{name: "no OS named", pod: &v1.Pod{}},
		{name: "spec.os linux", pod: &v1.Pod{Spec: v1.PodSpec{OS: &v1.PodOS{Name: v1.Linux}}}},
		{name: "spec.os windows", pod: &v1.Pod{Spec: v1.PodSpec{OS: &v1.PodOS{Name: v1.Windows}}}, reason: ReasonPodOSNotSupported},
		{name: "the os label linux", pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelOSStable: "linux"}}}},
		{name: "the os label windows", pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelOSStable: "windows"}}},
			reason: ReasonPodOSSelectorNodeLabelDoesNotMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := admitOS(tc.pod, "linux")
			assert.Equal(t, tc.reason == "", ok)
			assert.Equal(t, tc.reason, reason)
			if !ok {
				assert.Contains(t, msg, "Failed to admit pod as the ")
			}
		})
	}
}
