package podspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec"
)

func TestIsSidecar(t *testing.T) {
	assert.False(t, podspec.IsSidecar(&v1.Container{}))
	assert.False(t, podspec.IsSidecar(&v1.Container{RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever)}))
	assert.True(t, podspec.IsSidecar(&v1.Container{RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}))
}

func TestIsCritical(t *testing.T) {
	annotated := func(k, v string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{k: v}}}
	}
	prio := func(p int32) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{Priority: &p}} }
	assert.False(t, podspec.IsCritical(&v1.Pod{}))
	assert.False(t, podspec.IsCritical(annotated(podspec.ConfigSourceAnnotation, podspec.SourceAPI)))
	assert.True(t, podspec.IsCritical(annotated(podspec.ConfigSourceAnnotation, "file")))
	assert.True(t, podspec.IsCritical(annotated(podspec.ConfigMirrorAnnotation, "hash")))
	assert.False(t, podspec.IsCritical(prio(podspec.SystemCriticalPriority-1)))
	assert.True(t, podspec.IsCritical(prio(podspec.SystemCriticalPriority)))
	assert.True(t, podspec.IsCritical(prio(podspec.SystemCriticalPriority+1000)))
}

func TestRestartsOnResize(t *testing.T) {
	c := &v1.Container{Name: "c", ResizePolicy: []v1.ContainerResizePolicy{
		{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer},
		{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired},
	}}
	assert.True(t, podspec.RestartsOnResize(c, v1.ResourceMemory))
	assert.False(t, podspec.RestartsOnResize(c, v1.ResourceCPU))
	assert.False(t, podspec.RestartsOnResize(&v1.Container{}, v1.ResourceMemory), "NotRequired by default")
}
