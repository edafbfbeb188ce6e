package podspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

func TestIsStaticAndIsMirror(t *testing.T) {
	pod := func(annotations map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	}
	tests := []struct {
		name           string
		pod            *v1.Pod
		static, mirror bool
	}{
		{"nil", nil, false, false},
		{"no annotation", pod(nil), false, false},
		{"API server", pod(map[string]string{podspec.ConfigSourceAnnotation: "api"}), false, false},
		{"file", pod(map[string]string{podspec.ConfigSourceAnnotation: "file"}), true, false},
		{"http", pod(map[string]string{podspec.ConfigSourceAnnotation: "http"}), true, false},
		{"mirror", pod(map[string]string{podspec.ConfigSourceAnnotation: "api", podspec.ConfigMirrorAnnotation: "h"}), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.static, podspec.IsStatic(tt.pod))
			assert.Equal(t, tt.mirror, podspec.IsMirror(tt.pod))
		})
	}
}

func TestFullName(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default"}}
	assert.Equal(t, "web-node1_default", podspec.FullName(pod))
}
