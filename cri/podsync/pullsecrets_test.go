package podsync_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func dockerConfigJSON(name, js string) *v1.Secret {
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(js)}}
}

func TestPullAuths(t *testing.T) {
	hubAuth := base64.StdEncoding.EncodeToString([]byte("hubuser:hubpass"))
	secrets := []*v1.Secret{
		dockerConfigJSON("regcred", `{"auths": {
			"registry.example.com": {"username": "reg", "password": "r"},
			"registry.example.com/team": {"username": "team", "password": "t"},
			"*.example.com": {"username": "glob", "password": "g"},
			"https://index.docker.io/v1/": {"auth": "`+hubAuth+`"},
			"localhost:5000": {"username": "local", "password": "l"}}}`),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "legacy"}, Type: v1.SecretTypeDockercfg,
			Data: map[string][]byte{v1.DockerConfigKey: []byte(`{"quay.io": {"username": "quay", "password": "q"}}`)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "opaque"}, Type: v1.SecretTypeOpaque,
			Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`not even JSON`)}},
	}
	users := func(auths []*runtimeapi.AuthConfig) []string {
		var out []string
		for _, a := range auths {
			out = append(out, a.GetUsername()+":"+a.GetPassword())
		}
		return out
	}
	tests := []struct {
		image string
		want  []string
	}{
		{"registry.example.com/team/app:1", []string{"team:t", "reg:r", "glob:g"}},
		{"registry.example.com/other/app", []string{"reg:r", "glob:g"}},
		{"mirror.example.com/app@sha256:0123456789012345678901234567890123456789012345678901234567890123", []string{"glob:g"}},
		{"busybox", []string{"hubuser:hubpass"}},
		{"docker.io/library/busybox:1.36", []string{"hubuser:hubpass"}},
		{"someone/tool:v2", []string{"hubuser:hubpass"}},
		{"quay.io/org/app", []string{"quay:q"}},
		{"localhost:5000/app", []string{"local:l"}},
		{"registry.example.com:5000/app", nil},
		{"ghcr.io/org/app", nil},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			auths, err := podsync.PullAuths(secrets, tt.image)
			require.NoError(t, err)
			assert.Equal(t, tt.want, users(auths))
		})
	}

	_, err := podsync.PullAuths([]*v1.Secret{dockerConfigJSON("broken", `{"auths": {"r.io": {"auth": "bm9jb2xvbg=="}}}`)}, "r.io/x")
	assert.ErrorContains(t, err, "image pull secret default/broken")
	assert.ErrorContains(t, err, "must be formatted as base64(username:password)")
	assert.NotContains(t, err.Error(), "bm9jb2xvbg", "never the secret's content")
}

func TestSyncPodPullsWithImagePullSecrets(t *testing.T) {
	objs := &objects{secrets: map[string]*v1.Secret{
		"default/regcred": dockerConfigJSON("regcred", `{"auths": {"registry.example.com": {"username": "u1", "password": "p1"}, "*.example.com": {"username": "u2", "password": "p2"}}}`),
	}}
	h := newHarness(t)
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, Config: containerconfig.Options{LogRoot: t.TempDir(), Secrets: objs}})
	require.NoError(t, err)
	c := ctr("app")
	c.Image = "registry.example.com/team/app:1"
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}, {Name: "missing"}}

	// Every credential fails: each is tried, in order, and the message
	// lists the runtime's answers.
	h.rt.SetPullBehavior(c.Image, fake.PullBehavior{Err: errors.New("401 Unauthorized")})
	st := step(t, s.SyncPod(t.Context(), pod, h.status(pod)), "app")
	require.ErrorIs(t, st.Err, podsync.ErrImagePull)
	pulls := h.rt.CallsOf(fake.PullImage)
	require.Len(t, pulls, 2)
	assert.Equal(t, "u1", pulls[0].Request.(*runtimeapi.PullImageRequest).GetAuth().GetUsername())
	assert.Equal(t, "u2", pulls[1].Request.(*runtimeapi.PullImageRequest).GetAuth().GetUsername())
	assert.Regexp(t, `^\[.*401 Unauthorized.*, .*401 Unauthorized.*\]$`, st.Message)
	assert.Contains(t, h.rec.Strings(), "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (missing); attempting to pull the image may not succeed.")

	// Without secrets, the pull goes without credentials.
	c.Image = "busybox:2"
	pod = newPod(v1.RestartPolicyAlways, nil, c)
	pod.UID = "uid-2"
	require.NoError(t, s.SyncPod(t.Context(), pod, h.status(pod)).Err())
	pulls = h.rt.CallsOf(fake.PullImage)
	assert.Nil(t, pulls[len(pulls)-1].Request.(*runtimeapi.PullImageRequest).GetAuth())
}
