package admission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/admission"
)

func TestAppArmor(t *testing.T) {
	profile := func(t v1.AppArmorProfileType) *v1.AppArmorProfile { return &v1.AppArmorProfile{Type: t} }
	withPod := func(p *v1.AppArmorProfile) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{AppArmorProfile: p}, Containers: []v1.Container{{Name: "c"}}}}
	}
	withContainer := func(p *v1.AppArmorProfile) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i", SecurityContext: &v1.SecurityContext{AppArmorProfile: p}}}, Containers: []v1.Container{{Name: "c"}}}}
	}
	withAnnotation := func(v string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": v}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	}
	localhost := func(name string) *v1.AppArmorProfile {
		return &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	const notEnabled = "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		host    bool
		message string // "" means admitted
	}{
		{name: "no profile", pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}},
		{name: "unconfined everywhere", pod: withPod(profile(v1.AppArmorProfileTypeUnconfined))},
		{name: "unconfined annotation", pod: withAnnotation(v1.DeprecatedAppArmorBetaProfileNameUnconfined)},
		{name: "pod field, no AppArmor on the host", pod: withPod(profile(v1.AppArmorProfileTypeRuntimeDefault)), message: notEnabled},
		{name: "an init container's field", pod: withContainer(profile(v1.AppArmorProfileTypeLocalhost)), message: notEnabled},
		{name: "the annotation", pod: withAnnotation(v1.DeprecatedAppArmorBetaProfileRuntimeDefault), message: notEnabled},
		{name: "a host with AppArmor: the runtime enforces it", pod: withPod(profile(v1.AppArmorProfileTypeRuntimeDefault)), host: true},
		{name: "a host with AppArmor, a named Localhost profile", pod: withContainer(localhost("k8s-deny-write")), host: true},
		{name: "a Localhost profile without a name", pod: withContainer(profile(v1.AppArmorProfileTypeLocalhost)), host: true,
			message: `Cannot enforce AppArmor: invalid empty AppArmor profile name: "&AppArmorProfile{Type:Localhost,LocalhostProfile:nil,}"`},
		{name: "a blank Localhost profile", pod: withPod(localhost("  ")), host: true,
			message: `Cannot enforce AppArmor: invalid empty AppArmor profile name: "&AppArmorProfile{Type:Localhost,LocalhostProfile:*  ,}"`},
		{name: "an annotation naming no profile", pod: withAnnotation(v1.DeprecatedAppArmorBetaProfileNamePrefix), host: true,
			message: `Cannot enforce AppArmor: invalid empty AppArmor profile name: "&AppArmorProfile{Type:Localhost,LocalhostProfile:*,}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := admission.AppArmor{HostEnabled: tc.host}.Admit(tc.pod, nil)
			if tc.message == "" {
				assert.True(t, ok)
				return
			}
			assert.False(t, ok)
			assert.Equal(t, admission.ReasonAppArmor, reason)
			assert.Equal(t, tc.message, msg)
		})
	}
}
