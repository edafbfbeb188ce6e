package podspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

func TestNormalizeSysctlName(t *testing.T) {
	for in, want := range map[string]string{
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"kernel/shm_rmid_forced":           "kernel.shm_rmid_forced",
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"plain":                            "plain",
	} {
		assert.Equal(t, want, podspec.NormalizeSysctlName(in), in)
	}
}

// TestAppArmorProfile pins upstream's choice of a container's profile: the
// container's field, then the deprecated annotation, then the pod's field.
func TestAppArmorProfile(t *testing.T) {
	aa := func(typ v1.AppArmorProfileType, name ...string) *v1.AppArmorProfile {
		p := &v1.AppArmorProfile{Type: typ}
		if len(name) != 0 {
			p.LocalhostProfile = &name[0]
		}
		return p
	}
	const key = v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "app"
	for _, tc := range []struct {
		name       string
		pod, ctr   *v1.AppArmorProfile
		annotation string
		want       *v1.AppArmorProfile
	}{
		{name: "none"},
		{name: "the pod's", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), want: aa(v1.AppArmorProfileTypeRuntimeDefault)},
		{name: "the container's over the pod's", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), ctr: aa(v1.AppArmorProfileTypeUnconfined),
			want: aa(v1.AppArmorProfileTypeUnconfined)},
		{name: "the annotation over the pod's", pod: aa(v1.AppArmorProfileTypeUnconfined), annotation: "localhost/k8s-audit",
			want: aa(v1.AppArmorProfileTypeLocalhost, "k8s-audit")},
		{name: "the container's over the annotation", ctr: aa(v1.AppArmorProfileTypeRuntimeDefault), annotation: "unconfined",
			want: aa(v1.AppArmorProfileTypeRuntimeDefault)},
		{name: "annotation runtime/default", annotation: "runtime/default", want: aa(v1.AppArmorProfileTypeRuntimeDefault)},
		{name: "annotation unconfined", annotation: "unconfined", want: aa(v1.AppArmorProfileTypeUnconfined)},
		{name: "an invalid annotation is ignored", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), annotation: "bogus",
			want: aa(v1.AppArmorProfileTypeRuntimeDefault)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := v1.Container{Name: "app"}
			if tc.ctr != nil {
				c.SecurityContext = &v1.SecurityContext{AppArmorProfile: tc.ctr}
			}
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
			if tc.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: tc.pod}
			}
			if tc.annotation != "" {
				pod.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{key: tc.annotation}}
			}
			assert.Equal(t, tc.want, podspec.AppArmorProfile(pod, &pod.Spec.Containers[0]))
		})
	}
}
