package podsource_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/internal/podsource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
		{"API server", pod(map[string]string{podsource.SourceAnnotation: "api"}), false, false},
		{"file", pod(map[string]string{podsource.SourceAnnotation: "file"}), true, false},
		{"http", pod(map[string]string{podsource.SourceAnnotation: "http"}), true, false},
		{"mirror", pod(map[string]string{podsource.SourceAnnotation: "api", podsource.MirrorAnnotation: "h"}), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.static, podsource.IsStatic(tt.pod))
			assert.Equal(t, tt.mirror, podsource.IsMirror(tt.pod))
		})
	}
}
