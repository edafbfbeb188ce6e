package agenttest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/volume"
)

// privateImage is on a registry that serves it only to alice.
const privateImage = "private.registry.example/team/app:1"

// pullSecrets are the secrets of the tests: team-a's holds alice's
// credentials, team-c's the same in another secret, team-d's a wrong
// password.
func pullSecrets() *volume.StaticSources {
	s := &volume.StaticSources{}
	for _, sec := range []struct{ ns, name, password string }{
		{"team-a", "regcred", "s3cret"}, {"team-c", "copy", "s3cret"}, {"team-d", "wrong", "guess"},
	} {
		s.SetSecret(&v1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: sec.ns, Name: sec.name, UID: types.UID(sec.ns + "-" + sec.name)},
			Type:       v1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{v1.DockerConfigJsonKey: fmt.Appendf(nil,
				`{"auths": {"private.registry.example": {"username": "alice", "password": %q}}}`, sec.password)},
		})
	}
	return s
}

// privateNode is a node whose registry serves privateImage only to alice,
// with the secrets of pullSecrets.
func privateNode(t *testing.T, o agenttest.Options) *agenttest.Node {
	t.Helper()
	o.Agent.Cluster.VolumeSources = volume.Sources{Secrets: pullSecrets()}
	n := agenttest.NewNode(t, o)
	n.Runtime().SetPullBehavior(privateImage, fake.PullBehavior{Auth: &runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"}})
	return n
}

// appPod is a pod of namespace ns running privateImage with pull policy
// policy and, if secret is not empty, that image pull secret.
func appPod(ns, secret string, policy v1.PullPolicy) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: privateImage, ImagePullPolicy: policy}}}}
	if secret != "" {
		p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: secret}}
	}
	return p
}

// pullsOf are the credentials ("user:password", "" for none) of the pulls
// of privateImage for the pods of namespace ns from the call n on.
func pullsOf(node *agenttest.Node, ns string, n int) []string {
	var out []string
	for _, c := range node.Runtime().CallsOf(fake.PullImage)[n:] {
		req := c.Request.(*runtimeapi.PullImageRequest)
		if req.GetImage().GetImage() != privateImage || req.GetSandboxConfig().GetMetadata().GetNamespace() != ns {
			continue
		}
		a := req.GetAuth()
		out = append(out, strings.TrimSuffix(a.GetUsername()+":"+a.GetPassword(), ":"))
	}
	return out
}

// start adds the pod, lets 10s pass, and returns its pulls of privateImage
// and its events. (The pods that failed go on retrying meanwhile.)
func start(n *agenttest.Node, p *v1.Pod) (pulls, events []string) {
	before, seen := len(n.Runtime().CallsOf(fake.PullImage)), len(n.Events())
	n.AddPod(p)
	n.Step(10 * time.Second)
	for _, e := range n.Events()[seen:] {
		if e.Object == "Pod "+p.Namespace+"/"+p.Name {
			events = append(events, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return pullsOf(n, p.Namespace, before), events
}

// waiting is the pod's container's waiting reason and message; running
// is "Running".
func waiting(n *agenttest.Node, ns string) string {
	p := n.Pod(ns, "app")
	if len(p.Status.ContainerStatuses) == 0 {
		return "no status"
	}
	st := p.Status.ContainerStatuses[0].State
	switch {
	case st.Running != nil:
		return "Running"
	case st.Waiting != nil:
		return st.Waiting.Reason + ": " + st.Waiting.Message
	}
	return "terminated"
}

// KubeletEnsureSecretPulledImages, upstream's default policy
// (NeverVerifyPreloadedImages): team-a pulls a private image with its
// secret; a pod without that secret whose image is present must pull it
// with its own credentials (none, or wrong ones: refused by the registry;
// pull policy Never: the image is "not present"), and a pod with the same
// credentials in another secret uses it as it is. Without the feature
// (TestPulledImagesOff) every pod would run.
func TestPulledImageNeedsThePodsCredentials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		n := privateNode(t, agenttest.Options{Agent: agent.Options{RootDir: root}})

		pulls, _ := start(n, appPod("team-a", "regcred", v1.PullIfNotPresent))
		assert.Equal(t, []string{"alice:s3cret"}, pulls)
		assert.Equal(t, "Running", waiting(n, "team-a"))

		pulls, events := start(n, appPod("team-b", "", v1.PullIfNotPresent))
		assert.Equal(t, []string{""}, pulls, "present, but pulled with team-a's secret: team-b pulls, with no credentials")
		assert.Regexp(t, `^(ErrImagePull|ImagePullBackOff): .*pull access denied`, waiting(n, "team-b"))
		assert.Contains(t, events, `Warning Failed Failed to pull image "private.registry.example/team/app:1": failed to pull and unpack image "private.registry.example/team/app:1": `+
			`failed to resolve reference "private.registry.example/team/app:1": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`)
		assert.NotContains(t, events, `Normal Pulled Container image "private.registry.example/team/app:1" already present on machine and can be accessed by the pod`)

		pulls, _ = start(n, appPod("team-d", "wrong", v1.PullIfNotPresent))
		assert.Equal(t, []string{"alice:guess"}, pulls, "team-d pulls with its own credentials, which the registry refuses")
		assert.Regexp(t, `^(ErrImagePull|ImagePullBackOff): .*401 Unauthorized`, waiting(n, "team-d"))

		pulls, events = start(n, appPod("team-c", "copy", v1.PullIfNotPresent))
		assert.Empty(t, pulls, "team-c's secret holds the credentials that pulled it")
		assert.Contains(t, events, `Normal Pulled Container image "private.registry.example/team/app:1" already present on machine and can be accessed by the pod`)
		assert.Equal(t, "Running", waiting(n, "team-c"))

		never := appPod("team-e", "", v1.PullNever)
		pulls, events = start(n, never)
		assert.Empty(t, pulls)
		assert.Equal(t, `ErrImageNeverPull: Container image "private.registry.example/team/app:1" is not present with pull policy of Never`, waiting(n, "team-e"),
			"as if the image were absent")
		assert.Contains(t, events, `Warning ErrImageNeverPull Container image "private.registry.example/team/app:1" is not present with pull policy of Never`)

		// The record, as upstream keeps it: the secrets by namespace,
		// name, UID and hash; never the password.
		img, err := n.Runtime().ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: privateImage}, false)
		require.NoError(t, err)
		ref := img.GetImage().GetId()
		require.NotEmpty(t, ref)
		s, err := pullrecords.OpenStore(filepath.Join(root, pullrecords.DirName))
		require.NoError(t, err)
		r, ok, err := s.Record(ref)
		require.NoError(t, err)
		require.True(t, ok)
		secrets := r.Credentials["private.registry.example/team/app"].Secrets
		require.Len(t, secrets, 2, "team-a's, and team-c's, remembered when it matched")
		assert.Equal(t, []string{"team-a/regcred/team-a-regcred", "team-c/copy/team-c-copy"},
			[]string{secrets[0].Namespace + "/" + secrets[0].Name + "/" + secrets[0].UID, secrets[1].Namespace + "/" + secrets[1].Name + "/" + secrets[1].UID})
		assert.Equal(t, secrets[0].CredentialHash, secrets[1].CredentialHash)
		files, err := filepath.Glob(filepath.Join(root, pullrecords.DirName, "pulled", "*"))
		require.NoError(t, err)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			assert.NotContains(t, string(b), "s3cret")
			fi, err := os.Stat(f)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		}
	})
}

// imagePullCredentialsVerificationPolicy NeverVerify: any pod uses any
// image present; records are still kept.
func TestPulledImageNeverVerify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := privateNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{
			PulledImages: agent.PulledImagesOptions{VerificationPolicy: pullrecords.NeverVerify}}}})
		pulls, _ := start(n, appPod("team-a", "regcred", v1.PullIfNotPresent))
		assert.Equal(t, []string{"alice:s3cret"}, pulls)
		pulls, events := start(n, appPod("team-b", "", v1.PullIfNotPresent))
		assert.Empty(t, pulls)
		assert.Contains(t, events, `Normal Pulled Container image "private.registry.example/team/app:1" already present on machine and can be accessed by the pod`)
		assert.Equal(t, "Running", waiting(n, "team-b"))
	})
}

// An image on the node before the node pulled it (preloaded) is any pod's
// under the default policy; AlwaysVerify makes every pod show credentials,
// and NeverVerifyAllowlistedImages lets only the allowlist's images go
// unverified.
func TestPreloadedImages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    pullrecords.Policy
		allowlist []string
		want      []string // team-b's pulls
	}{
		{name: "default: not verified", want: nil},
		{name: "AlwaysVerify", policy: pullrecords.AlwaysVerify, want: []string{""}},
		{name: "allowlisted", policy: pullrecords.NeverVerifyAllowlistedImages, allowlist: []string{"private.registry.example/team/*"}, want: nil},
		{name: "not allowlisted", policy: pullrecords.NeverVerifyAllowlistedImages, allowlist: []string{"private.registry.example/other/*"}, want: []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := privateNode(t, agenttest.Options{Images: []string{privateImage}, Agent: agent.Options{Node: agent.NodeOptions{
					PulledImages: agent.PulledImagesOptions{VerificationPolicy: tc.policy, Allowlist: tc.allowlist}}}})
				pulls, _ := start(n, appPod("team-b", "", v1.PullIfNotPresent))
				assert.Equal(t, tc.want, pulls)
				if tc.want == nil {
					assert.Equal(t, "Running", waiting(n, "team-b"))
				} else {
					assert.Regexp(t, `^(ErrImagePull|ImagePullBackOff): `, waiting(n, "team-b"))
				}
			})
		})
	}
}

// The records outlive the node: after a restart, with the image still
// there, a pod without the secret must still pull it, though the image now
// looks preloaded to the new agent.
func TestPulledImageRecordsSurviveARestart(t *testing.T) {
	root := t.TempDir()
	t.Run("first run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			n := privateNode(t, agenttest.Options{Agent: agent.Options{RootDir: root}})
			pulls, _ := start(n, appPod("team-a", "regcred", v1.PullIfNotPresent))
			assert.Equal(t, []string{"alice:s3cret"}, pulls)
		})
	})
	t.Run("after a restart", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			n := privateNode(t, agenttest.Options{Images: []string{privateImage}, Agent: agent.Options{RootDir: root}})
			pulls, _ := start(n, appPod("team-b", "", v1.PullIfNotPresent))
			assert.Equal(t, []string{""}, pulls)
			pulls, _ = start(n, appPod("team-a", "regcred", v1.PullIfNotPresent))
			assert.Empty(t, pulls)
		})
	})
}

// With the feature off (upstream's KubeletEnsureSecretPulledImages=false)
// any pod uses any image present, and nothing is recorded.
func TestPulledImagesOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		n := privateNode(t, agenttest.Options{Agent: agent.Options{RootDir: root, Node: agent.NodeOptions{PulledImages: agent.PulledImagesOptions{Off: true}}}})
		pulls, _ := start(n, appPod("team-a", "regcred", v1.PullIfNotPresent))
		assert.Equal(t, []string{"alice:s3cret"}, pulls)
		pulls, events := start(n, appPod("team-b", "", v1.PullIfNotPresent))
		assert.Empty(t, pulls)
		assert.Contains(t, events, `Normal Pulled Container image "private.registry.example/team/app:1" already present on machine`)
		assert.Equal(t, "Running", waiting(n, "team-b"))
		_, err := os.Stat(filepath.Join(root, pullrecords.DirName))
		assert.True(t, os.IsNotExist(err), "no records")
	})
}
