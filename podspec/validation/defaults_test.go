package validation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

func TestDefaultPod(t *testing.T) {
	probe := func() *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	}
	cases := []struct {
		name  string
		pod   func() *v1.Pod
		check func(t *testing.T, p *v1.Pod)
	}{
		{"restartPolicy Always", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.RestartPolicyAlways, p.Spec.RestartPolicy)
		}},
		{"a given restartPolicy is kept", func() *v1.Pod { p := bare(); p.Spec.RestartPolicy = v1.RestartPolicyNever; return p }, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.RestartPolicyNever, p.Spec.RestartPolicy)
		}},
		{"dnsPolicy ClusterFirst", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.DNSClusterFirst, p.Spec.DNSPolicy)
		}},
		{"terminationGracePeriodSeconds 30", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int64](30), p.Spec.TerminationGracePeriodSeconds)
		}},
		{"a zero terminationGracePeriodSeconds is kept", func() *v1.Pod {
			p := bare()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int64](0), p.Spec.TerminationGracePeriodSeconds)
		}},
		{"schedulerName, securityContext, enableServiceLinks", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, "default-scheduler", p.Spec.SchedulerName)
			assert.Equal(t, &v1.PodSecurityContext{}, p.Spec.SecurityContext)
			assert.Equal(t, ptr.To(true), p.Spec.EnableServiceLinks)
		}},
		{"termination message path and policy in every container", func() *v1.Pod {
			p := bare()
			p.Spec.InitContainers = []v1.Container{{Name: "i", Image: "i:1"}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				assert.Equal(t, "/dev/termination-log", c.TerminationMessagePath, c.Name)
				assert.Equal(t, v1.TerminationMessageReadFile, c.TerminationMessagePolicy, c.Name)
			}
		}},
		{"port protocol TCP, hostPort only with hostNetwork", func() *v1.Pod {
			p := bare()
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}, p.Spec.Containers[0].Ports)
		}},
		{"hostNetwork: hostPort = containerPort", func() *v1.Pod {
			p := bare()
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, int32(80), p.Spec.Containers[0].Ports[0].HostPort)
		}},
		{"probes: timeout 1, period 10, success 1, failure 3, HTTP scheme and path", func() *v1.Pod {
			p := bare()
			c := &p.Spec.Containers[0]
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = probe(), probe(), probe()
			c.ReadinessProbe.PeriodSeconds = 2
			return p
		}, func(t *testing.T, p *v1.Pod) {
			c := p.Spec.Containers[0]
			for i, pr := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				assert.Equal(t, int32(1), pr.TimeoutSeconds, i)
				assert.Equal(t, int32(1), pr.SuccessThreshold, i)
				assert.Equal(t, int32(3), pr.FailureThreshold, i)
				assert.Equal(t, v1.URISchemeHTTP, pr.HTTPGet.Scheme, i)
				assert.Equal(t, "/", pr.HTTPGet.Path, i)
			}
			assert.Equal(t, int32(10), c.LivenessProbe.PeriodSeconds)
			assert.Equal(t, int32(2), c.ReadinessProbe.PeriodSeconds, "a given value is kept")
		}},
		{"requests default to limits", func() *v1.Pod {
			p := bare()
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
			}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			r := p.Spec.Containers[0].Resources.Requests
			assert.Equal(t, "100m", ptr.To(r[v1.ResourceCPU]).String())
			assert.Equal(t, "1Gi", ptr.To(r[v1.ResourceMemory]).String())
		}},
		{"volume modes and hostPath type", func() *v1.Pod {
			p := bare()
			p.Spec.Volumes = []v1.Volume{
				{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x"}}},
				{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
				{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}},
			}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int32](0o644), p.Spec.Volumes[0].Secret.DefaultMode)
			assert.Equal(t, ptr.To[int32](0o644), p.Spec.Volumes[1].ConfigMap.DefaultMode)
			assert.Equal(t, ptr.To(v1.HostPathUnset), p.Spec.Volumes[2].HostPath.Type)
		}},
		{"a negative terminationGracePeriodSeconds is 1, as the API server's decoding makes it", func() *v1.Pod {
			p := bare()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-5)
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int64](1), p.Spec.TerminationGracePeriodSeconds)
		}},
		{"a volume with no source is an emptyDir; projected, downwardAPI and image volume defaults", func() *v1.Pod {
			p := bare()
			p.Spec.Volumes = []v1.Volume{
				{Name: "none"},
				{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
				}}}},
				{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry/models:v1"}}},
				{Name: "latest", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry/models"}}},
			}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, p.Spec.Volumes[0].VolumeSource)
			pr := p.Spec.Volumes[1].Projected
			assert.Equal(t, ptr.To[int32](0o644), pr.DefaultMode)
			assert.Equal(t, "v1", pr.Sources[0].DownwardAPI.Items[0].FieldRef.APIVersion)
			assert.Equal(t, ptr.To[int64](3600), pr.Sources[1].ServiceAccountToken.ExpirationSeconds)
			assert.Equal(t, v1.PullIfNotPresent, p.Spec.Volumes[2].Image.PullPolicy)
			assert.Equal(t, v1.PullAlways, p.Spec.Volumes[3].Image.PullPolicy)
		}},
		{"fieldRef apiVersion v1", func() *v1.Pod {
			p := bare()
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, "v1", p.Spec.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod()
			validation.DefaultPod(p)
			tc.check(t, p)
			again := p.DeepCopy()
			validation.DefaultPod(again)
			assert.Equal(t, p, again, "idempotent")
		})
	}
}

func bare() *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
}

func TestPullPolicyForImage(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"busybox":                          v1.PullAlways,
		"busybox:latest":                   v1.PullAlways,
		"busybox:1.36":                     v1.PullIfNotPresent,
		"docker.io/library/busybox:1.36":   v1.PullIfNotPresent,
		"registry:5000/busybox":            v1.PullAlways,
		"registry:5000/busybox:latest":     v1.PullAlways,
		"registry:5000/busybox:v2":         v1.PullIfNotPresent,
		"busybox@sha256:0123456789abcdef0": v1.PullIfNotPresent,
	} {
		t.Run(image, func(t *testing.T) {
			assert.Equal(t, want, validation.PullPolicyForImage(image))
			p := bare()
			p.Spec.Containers[0].Image = image
			validation.DefaultPod(p)
			assert.Equal(t, want, p.Spec.Containers[0].ImagePullPolicy)
		})
	}
}
