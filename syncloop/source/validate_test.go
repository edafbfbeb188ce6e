package source_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// validPod is a defaulted pod ValidatePod accepts; each case breaks one
// field.
func validPod() *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{
				Name: "web", Image: "nginx:1.27",
				VolumeMounts:  []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "www"}},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{}}},
			}},
		},
	}
	source.DefaultPod(p)
	return p
}

// Fields the API server refuses are refused in static pods too, with
// upstream's field paths and messages, rather than accepted and acted on.
func TestValidatePodAsTheAPIServer(t *testing.T) {
	item := func(key, path string) []v1.KeyToPath { return []v1.KeyToPath{{Key: key, Path: path}} }
	tests := []struct {
		name   string
		break_ func(p *v1.Pod)
		want   []string
	}{
		{"valid", func(*v1.Pod) {}, nil},
		{"a volume with no source", func(p *v1.Pod) { p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{} },
			[]string{"spec.volumes[0]: Required value: must specify a volume type"}},
		{"a volume with two sources", func(p *v1.Pod) {
			p.Spec.Volumes[0].HostPath = &v1.HostPathVolumeSource{Path: "/srv"}
		}, []string{"spec.volumes[0].emptyDir: Forbidden: may not specify more than 1 volume type"}},
		{"a configMap item path with ..", func(p *v1.Pod) {
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "c"}, Items: item("k", "a/../../etc")}}
		}, []string{`spec.volumes[0].configMap.items[0].path: Invalid value: "a/../../etc": must not contain '..'`}},
		{"a secret item path that is absolute", func(p *v1.Pod) {
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", Items: item("k", "/etc/passwd")}}
		}, []string{`spec.volumes[0].secret.items[0].path: Invalid value: "/etc/passwd": must be a relative path`}},
		{"an item path that starts with ..", func(p *v1.Pod) {
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "c"}, Items: item("k", "..data")}}
		}, []string{`spec.volumes[0].configMap.items[0].path: Invalid value: "..data": must not start with '..'`}},
		{"an item with no path", func(p *v1.Pod) {
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "c"}, Items: item("k", "")}}
		}, []string{"spec.volumes[0].configMap.items[0].path: Required value"}},
		{"a downwardAPI path with .. in a projected volume", func(p *v1.Pod) {
			p.Spec.Volumes[0].VolumeSource = v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{
				DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "../labels",
					FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}}}
		}, []string{`spec.volumes[0].projected.sources[0].downwardAPI.items[0].path: Invalid value: "../labels": must not contain '..'`}},
		{"a subPath with ..", func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "../../etc" },
			[]string{`spec.containers[0].volumeMounts[0].subPath: Invalid value: "../../etc": must not contain '..'`}},
		{"an absolute subPath", func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "/etc" },
			[]string{`spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path`}},
		{"negative probe numbers", func(p *v1.Pod) {
			pr := p.Spec.Containers[0].LivenessProbe
			pr.PeriodSeconds, pr.TimeoutSeconds = -5, -1
		}, []string{
			"spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0",
			"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -5: must be greater than or equal to 0",
		}},
		{"a probe with two handlers", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe.Exec = &v1.ExecAction{Command: []string{"true"}}
		}, []string{"spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"}},
		{"a probe with no handler", func(p *v1.Pod) { p.Spec.Containers[0].ReadinessProbe = &v1.Probe{} },
			[]string{"spec.containers[0].readinessProbe: Required value: must specify a handler type"}},
		{"an invalid label", func(p *v1.Pod) { p.Labels["app"] = "not valid!" },
			[]string{`metadata.labels: Invalid value: "not valid!"`}},
		{"annotations over 256 KiB", func(p *v1.Pod) {
			p.Annotations["big"] = strings.Repeat("x", 5<<20)
		}, []string{"metadata.annotations: Too long: may not be more than 262144 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPod()
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			tt.break_(p)
			err := source.ValidatePod(p)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, source.ErrInvalidPod))
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
