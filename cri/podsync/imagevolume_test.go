package podsync_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

const modelsImage = "registry.example.com/models:v1"

// imageVolumePod is a pod with an image volume "models" that its
// container "app" mounts (subPath llm) and "side" does not.
func imageVolumePod(policy v1.PullPolicy) *v1.Pod {
	app, side := ctr("app"), ctr("side")
	app.VolumeMounts = []v1.VolumeMount{{Name: "models", MountPath: "/models", SubPath: "llm"}}
	pod := newPod(v1.RestartPolicyAlways, nil, app, side)
	pod.Annotations = map[string]string{"team": "ml"}
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}}
	pod.Spec.Volumes = []v1.Volume{{Name: "models", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: modelsImage, PullPolicy: policy}}}}
	return pod
}

// newImageVolumeSyncer is a Syncer whose pods' pull secret regcred holds
// the credentials the registry asks for the models image.
func newImageVolumeSyncer(t *testing.T, h *harness) *podsync.Syncer {
	t.Helper()
	objs := &objects{secrets: map[string]*v1.Secret{
		"default/regcred": dockerConfigJSON("regcred", `{"auths": {"registry.example.com": {"username": "u1", "password": "p1"}}}`),
	}}
	noHostPaths := containerconfig.VolumeHostPathsFunc(func(*v1.Pod) (map[string]string, error) { return map[string]string{}, nil })
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec,
		Config: containerconfig.Options{LogRoot: t.TempDir(), Secrets: objs, Volumes: noHostPaths}})
	require.NoError(t, err)
	return s
}

// createRequest returns the CreateContainer request of the named container.
func createRequest(t *testing.T, rt *fake.Runtime, name string) *runtimeapi.CreateContainerRequest {
	t.Helper()
	for _, c := range rt.CallsOf(fake.CreateContainer) {
		if r := c.Request.(*runtimeapi.CreateContainerRequest); r.GetConfig().GetMetadata().GetName() == name {
			return r
		}
	}
	t.Fatalf("no CreateContainer for %s", name)
	return nil
}

// TestSyncPodImageVolumes: the image of an image volume is pulled before
// the containers start, with the pod's pull secret, once in a sync; the
// container that mounts it gets the runtime's mount of that image.
func TestSyncPodImageVolumes(t *testing.T) {
	h := newHarness(t)
	h.rt.SetPullBehavior(modelsImage, fake.PullBehavior{Auth: &runtimeapi.AuthConfig{Username: "u1", Password: "p1"}})
	s := newImageVolumeSyncer(t, h)
	pod := imageVolumePod(v1.PullIfNotPresent)

	res := s.SyncPod(t.Context(), pod, h.status(pod))
	require.NoError(t, res.Err())
	pulls := h.rt.CallsOf(fake.PullImage)
	require.Len(t, pulls, 1, "one pull for two containers")
	pull := pulls[0].Request.(*runtimeapi.PullImageRequest)
	assert.Equal(t, modelsImage, pull.GetImage().GetImage())
	assert.Equal(t, "u1", pull.GetAuth().GetUsername(), "the pod's pull secret")

	st, err := h.rt.ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: modelsImage}, false)
	require.NoError(t, err)
	ref := st.GetImage().GetId()
	want := &runtimeapi.Mount{ContainerPath: "/models", Readonly: true, ImageSubPath: "llm",
		Image: &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: modelsImage, Annotations: map[string]string{"team": "ml"}}}
	mounts := createRequest(t, h.rt, "app").GetConfig().GetMounts()
	require.Len(t, mounts, 1)
	assert.Equal(t, want.String(), mounts[0].String())
	assert.Empty(t, createRequest(t, h.rt, "side").GetConfig().GetMounts())
	assert.Contains(t, h.rec.Strings(), `Normal Pulling Pulling image "`+modelsImage+`"`)
	assert.Contains(t, h.rec.Strings(), `Normal Pulled Successfully pulled image "`+modelsImage+`" in 0s`)

	// A sync that starts nothing pulls nothing and says nothing.
	h.rec.TakeStrings()
	require.NoError(t, s.SyncPod(t.Context(), pod, h.status(pod)).Err())
	assert.Len(t, h.rt.CallsOf(fake.PullImage), 1)
	assert.Empty(t, h.rec.TakeStrings())
}

// TestSyncPodImageVolumeFailures: a failed pull of an image volume holds
// the containers that mount it, with the pull's waiting reason and
// message, upstream's events and back-off; the others start.
func TestSyncPodImageVolumeFailures(t *testing.T) {
	t.Run("Never, absent", func(t *testing.T) {
		h := newHarness(t)
		s := newImageVolumeSyncer(t, h)
		pod := imageVolumePod(v1.PullNever)
		res := s.SyncPod(t.Context(), pod, h.status(pod))
		app := step(t, res, "app")
		require.ErrorIs(t, app.Err, podsync.ErrImageNeverPull)
		assert.Equal(t, podsync.ReasonErrImageNeverPull, app.Reason)
		assert.Equal(t, `Container image "`+modelsImage+`" is not present with pull policy of Never`, app.Message)
		require.NoError(t, step(t, res, "side").Err, "a container without the volume starts")
		w, ok := s.WaitingReason(pod.UID, "app")
		require.True(t, ok)
		assert.Equal(t, podsync.ReasonErrImageNeverPull, w.Reason)
		assert.Equal(t, []string{
			`Warning ErrImageNeverPull Container image "` + modelsImage + `" is not present with pull policy of Never`,
			`Warning Failed Error: ErrImageNeverPull`,
		}, filterEvents(h.rec.Strings(), "ErrImageNeverPull", "Failed"))
		assert.Empty(t, h.rt.CallsOf(fake.PullImage))
	})
	t.Run("pull fails, then backs off", func(t *testing.T) {
		h := newHarness(t)
		h.rt.SetPullBehavior(modelsImage, fake.PullBehavior{Err: errors.New("manifest unknown")})
		s := newImageVolumeSyncer(t, h)
		pod := imageVolumePod("") // defaulted: IfNotPresent for a tag
		app := step(t, s.SyncPod(t.Context(), pod, h.status(pod)), "app")
		require.ErrorIs(t, app.Err, podsync.ErrImagePull)
		assert.Contains(t, app.Message, "manifest unknown")
		assert.Contains(t, h.rec.Strings(), `Warning Failed Error: ErrImagePull`)

		h.clk.Step(time.Second)
		app = step(t, s.SyncPod(t.Context(), pod, h.status(pod)), "app")
		require.ErrorIs(t, app.Err, podsync.ErrImagePullBackOff)
		assert.Regexp(t, `^Back-off pulling image "`+modelsImage+`": ErrImagePull: .*manifest unknown`, app.Message)
		assert.Contains(t, h.rec.Strings(), `Normal BackOff Back-off pulling image "`+modelsImage+`"`)
		assert.Contains(t, h.rec.Strings(), `Warning Failed Error: ImagePullBackOff`)
		assert.Len(t, h.rt.CallsOf(fake.PullImage), 1, "backing off, no pull")

		// Past the back-off the pull works, and the container starts.
		h.rt.SetPullBehavior(modelsImage, fake.PullBehavior{})
		h.clk.Step(10 * time.Second)
		require.NoError(t, step(t, s.SyncPod(t.Context(), pod, h.status(pod)), "app").Err)
	})
}

// filterEvents keeps the events whose reason is one of reasons.
func filterEvents(events []string, reasons ...string) []string {
	var out []string
	for _, e := range events {
		if f := strings.Fields(e); len(f) > 1 && slices.Contains(reasons, f[1]) {
			out = append(out, e)
		}
	}
	return out
}
