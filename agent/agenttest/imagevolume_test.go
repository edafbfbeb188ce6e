package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// imageVolumePod is a pod of namespace ns whose container app (busybox)
// mounts at /data the subPath models of an image volume of image, with
// pull policy policy and, if secret is not empty, that image pull secret.
func imageVolumePod(ns, secret, image string, policy v1.PullPolicy) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "app", Image: "busybox:1.36",
			VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "models"}}}},
		Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: image, PullPolicy: policy}}}},
	}}
	if secret != "" {
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: secret}}
	}
	return p
}

// createMounts are the mounts of the CreateContainer calls of the pods of
// namespace ns.
func createMounts(n *agenttest.Node, ns string) [][]*runtimeapi.Mount {
	var out [][]*runtimeapi.Mount
	for _, c := range n.Runtime().CallsOf(fake.CreateContainer) {
		req := c.Request.(*runtimeapi.CreateContainerRequest)
		if req.GetSandboxConfig().GetMetadata().GetNamespace() == ns {
			out = append(out, req.GetConfig().GetMounts())
		}
	}
	return out
}

// ImageVolume (GA in 1.36): an image volume's image is pulled with the
// pod's pull secret before the container starts, with upstream's events,
// and the runtime mounts it read-only, with the volume's subPath inside the
// image. Pull policy Never and an absent image hold the container with
// upstream's ErrImageNeverPull. Without the feature the pod waits in
// ContainerCreating with FailedMount "no volume plugin supports volume".
func TestImageVolume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := privateNode(t, agenttest.Options{})

		pulls, events := start(n, imageVolumePod("team-a", "regcred", privateImage, v1.PullIfNotPresent))
		assert.Equal(t, "Running", waiting(n, "team-a"))
		assert.Equal(t, []string{"alice:s3cret"}, pulls, "the volume's image, pulled with the pod's secret")
		assert.Contains(t, events, `Normal Pulling Pulling image "`+privateImage+`"`)
		assert.Contains(t, events, `Normal Pulled Successfully pulled image "`+privateImage+`" in 0s`)
		st, err := n.Runtime().ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: privateImage}, false)
		require.NoError(t, err)
		want := &runtimeapi.Mount{ContainerPath: "/data", Readonly: true, ImageSubPath: "models",
			Image: &runtimeapi.ImageSpec{Image: st.GetImage().GetId(), UserSpecifiedImage: privateImage}}
		if mounts := createMounts(n, "team-a"); assert.Len(t, mounts, 1) {
			var got *runtimeapi.Mount
			for _, m := range mounts[0] {
				if m.GetContainerPath() == "/data" {
					got = m
				}
			}
			if assert.NotNil(t, got, "the container mounts the volume") {
				got = proto.CloneOf(got)
				assert.Equal(t, "api", got.GetImage().GetAnnotations()["kubernetes.io/config.source"], "the pod's annotations, as upstream's")
				got.Image.Annotations = nil
				assert.Equal(t, want.String(), got.String())
			}
		}

		// Never, and the image is absent: upstream's ErrImageNeverPull,
		// the container is never created.
		_, events = start(n, imageVolumePod("team-b", "", "registry.example/absent:1", v1.PullNever))
		assert.Equal(t, `ErrImageNeverPull: Container image "registry.example/absent:1" is not present with pull policy of Never`, waiting(n, "team-b"))
		assert.Equal(t, v1.PodPending, n.Pod("team-b", "app").Status.Phase)
		assert.Contains(t, events, `Warning ErrImageNeverPull Container image "registry.example/absent:1" is not present with pull policy of Never`)
		assert.Contains(t, events, `Warning Failed Error: ErrImageNeverPull`)
		assert.Empty(t, createMounts(n, "team-b"))

		n.Step(time.Minute)
		assert.Equal(t, "Running", waiting(n, "team-a"))
		for _, e := range n.Events() {
			assert.NotEqual(t, "FailedMount", e.Reason, e.String())
		}
	})
}
