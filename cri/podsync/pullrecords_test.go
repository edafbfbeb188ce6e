package podsync_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// The plugins tell a service account's credentials from the node's own.
var _ podsync.TrackedCredentials = (*credentialprovider.Providers)(nil)

// AuthHash is upstream's: the SHA-256 of the entry as JSON, empty fields
// left out, so that records are shared with upstream's kubelet.
func TestAuthHash(t *testing.T) {
	sum := func(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }
	assert.Equal(t, sum(`{"username":"alice","password":"s3cret"}`), podsync.AuthHash("alice", "s3cret", ""))
	assert.Equal(t, sum(`{"username":"alice","password":"s3cret","email":"a@example.com"}`), podsync.AuthHash("alice", "s3cret", "a@example.com"))
	assert.Equal(t, sum(`{}`), podsync.AuthHash("", "", ""))
}

func TestTrackedPullAuths(t *testing.T) {
	a := dockerConfigJSON("a", `{"auths": {"registry.example": {"username": "alice", "password": "s3cret", "email": "a@example.com"}}}`)
	a.UID = "uid-a"
	b := dockerConfigJSON("b", `{"auths": {"registry.example/team": {"auth": "YWxpY2U6czNjcmV0"}}}`) // alice:s3cret
	b.UID = "uid-b"
	got, err := podsync.TrackedPullAuths([]*v1.Secret{a, b}, "registry.example/team/app:1")
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, cri.TrackedAuth{Auth: &runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"}, Secret: &cri.ObjectID{Namespace: "default", Name: "b", UID: "uid-b"},
		Hash: podsync.AuthHash("alice", "s3cret", "")}, got[0], "the most specific location first")
	assert.Equal(t, cri.TrackedAuth{Auth: &runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"}, Secret: &cri.ObjectID{Namespace: "default", Name: "a", UID: "uid-a"},
		Hash: podsync.AuthHash("alice", "s3cret", "a@example.com")}, got[1])
}

// With pull records, a pod whose image is present uses it only when its
// credentials pulled it; else the image is pulled with the pod's own
// credentials, and a Never pod fails as if the image were absent.
func TestSyncPodVerifiesPulledImages(t *testing.T) {
	const image = "registry.example/team/app:1"
	secret := func(ns, name, password string) *v1.Secret {
		s := dockerConfigJSON(name, fmt.Sprintf(`{"auths": {"registry.example": {"username": "alice", "password": %q}}}`, password))
		s.Namespace, s.UID = ns, types.UID(ns+"-"+name)
		return s
	}
	objs := &objects{secrets: map[string]*v1.Secret{
		"team-a/regcred": secret("team-a", "regcred", "s3cret"),
		"team-c/copy":    secret("team-c", "copy", "s3cret"), // the same credentials in another secret
		"team-d/wrong":   secret("team-d", "wrong", "guess"),
	}}
	h := newHarness(t)
	h.rt.SetPullBehavior(image, fake.PullBehavior{Auth: &runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"}})
	records, err := pullrecords.New(pullrecords.Options{Dir: filepath.Join(t.TempDir(), pullrecords.DirName), Clock: h.clk})
	require.NoError(t, err)
	require.NoError(t, records.Open(t.Context(), h.rt))
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, PullRecords: records,
		Config: containerconfig.Options{LogRoot: t.TempDir(), Secrets: objs}})
	require.NoError(t, err)
	newPod := func(ns, secret string, policy v1.PullPolicy) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, UID: types.UID(ns + "-" + string(policy))},
			Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: policy}}}}
		if secret != "" {
			p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: secret}}
		}
		return p
	}
	type pull struct{ user, password string }
	pullsSince := func(n int) []pull {
		var out []pull
		for _, c := range h.rt.CallsOf(fake.PullImage)[n:] {
			a := c.Request.(*runtimeapi.PullImageRequest).GetAuth()
			out = append(out, pull{a.GetUsername(), a.GetPassword()})
		}
		return out
	}
	sync := func(p *v1.Pod) (podsync.StepResult, []pull, []string) {
		t.Helper()
		pulls, events := len(h.rt.CallsOf(fake.PullImage)), len(h.rec.Strings())
		st := step(t, s.SyncPod(context.Background(), p, h.status(p)), "app")
		return st, pullsSince(pulls), h.rec.Strings()[events:]
	}

	st, pulls, _ := sync(newPod("team-a", "regcred", v1.PullIfNotPresent))
	require.NoError(t, st.Err)
	assert.Equal(t, []pull{{"alice", "s3cret"}}, pulls, "team-a pulls with its secret")

	st, pulls, events := sync(newPod("team-b", "", v1.PullIfNotPresent))
	assert.ErrorIs(t, st.Err, podsync.ErrImagePull)
	assert.Equal(t, []pull{{}}, pulls, "team-b, with no secret, must pull: without credentials, refused")
	assert.Contains(t, st.Message, "pull access denied")
	assert.NotContains(t, events, `Normal Pulled Container image "registry.example/team/app:1" already present on machine and can be accessed by the pod`)

	st, pulls, events = sync(newPod("team-b", "", v1.PullNever))
	assert.ErrorIs(t, st.Err, podsync.ErrImageNeverPull)
	assert.Equal(t, podsync.ReasonErrImageNeverPull, st.Reason)
	assert.Equal(t, `Container image "registry.example/team/app:1" is not present with pull policy of Never`, st.Message, "as if it were absent")
	assert.Empty(t, pulls)
	assert.Contains(t, events, `Warning ErrImageNeverPull Container image "registry.example/team/app:1" is not present with pull policy of Never`)

	st, pulls, _ = sync(newPod("team-d", "wrong", v1.PullIfNotPresent))
	assert.ErrorIs(t, st.Err, podsync.ErrImagePull)
	assert.Equal(t, []pull{{"alice", "guess"}}, pulls, "team-d pulls with its own, wrong, credentials")
	assert.Contains(t, st.Message, "401 Unauthorized")

	st, pulls, events = sync(newPod("team-c", "copy", v1.PullIfNotPresent))
	require.NoError(t, st.Err)
	assert.Empty(t, pulls, "team-c's secret holds the credentials that pulled it")
	assert.Contains(t, events, `Normal Pulled Container image "registry.example/team/app:1" already present on machine and can be accessed by the pod`)

	st, pulls, _ = sync(newPod("team-a", "regcred", v1.PullNever))
	require.NoError(t, st.Err)
	assert.Empty(t, pulls)

	// A public image, pulled without credentials: every pod may use it.
	public := newPod("team-b", "", v1.PullIfNotPresent)
	public.UID = "public"
	public.Spec.Containers[0].Image = "registry.example/public/tool:1"
	st, pulls, _ = sync(public)
	require.NoError(t, st.Err)
	assert.Equal(t, []pull{{}}, pulls)
	other := public.DeepCopy()
	other.Namespace, other.UID = "team-d", "public-2"
	st, pulls, _ = sync(other)
	require.NoError(t, st.Err)
	assert.Empty(t, pulls)
}

// Without pull records, any pod uses any image present, as upstream with
// KubeletEnsureSecretPulledImages off.
func TestSyncPodWithoutPullRecords(t *testing.T) {
	h := newHarness(t)
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	require.NoError(t, h.sync(pod).Err())
	assert.Empty(t, h.rt.CallsOf(fake.PullImage))
	assert.Contains(t, h.rec.Strings(), `Normal Pulled Container image "busybox:1" already present on machine`)
}
