package validation_test

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

// A pod is defaulted, then validated, as an API server creates it.
func Example() {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "web", Image: "nginx:1.27",
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
		}}},
	}
	validation.DefaultPod(pod)
	c := pod.Spec.Containers[0]
	fmt.Println(pod.Spec.RestartPolicy, *pod.Spec.TerminationGracePeriodSeconds, c.ImagePullPolicy)
	fmt.Println(c.LivenessProbe.PeriodSeconds, c.LivenessProbe.HTTPGet.Scheme, c.LivenessProbe.HTTPGet.Path)
	fmt.Println(validation.ValidatePod(pod))

	pod.Spec.Containers[0].LivenessProbe.PeriodSeconds = -1
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/../etc"}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "date", MountPath: "/data"}}
	err := validation.ValidatePod(pod)
	fmt.Println(errors.Is(err, validation.ErrInvalidPod))
	fmt.Println(err)
	// Output:
	// Always 30 IfNotPresent
	// 10 HTTP /
	// <nil>
	// true
	// invalid pod default/web: [spec.volumes[0].hostPath.path: Invalid value: "/srv/../etc": must not contain '..', spec.containers[0].volumeMounts[0].name: Not found: "date", spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0]
}
