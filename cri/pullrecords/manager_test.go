package pullrecords_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// images is an ImageLister of fixed images.
type images []*runtimeapi.Image

func (l images) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return l, nil
}

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

func newManager(t *testing.T, dir string, policy pullrecords.Policy, present images) (*pullrecords.Manager, *clocktesting.FakePassiveClock) {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(t0)
	m, err := pullrecords.New(pullrecords.Options{Dir: dir, Policy: policy, Clock: clk})
	require.NoError(t, err)
	require.NoError(t, m.Open(context.Background(), present))
	return m, clk
}

// podCreds returns a lookup of creds that counts its calls.
func podCreds(creds pullrecords.PodCredentials, calls *int) func() (pullrecords.PodCredentials, error) {
	return func() (pullrecords.PodCredentials, error) { *calls++; return creds, nil }
}

// A pod pulls an image with its secret; another pod, without it, must pull
// again; the first pod, or one with the same credentials in another
// secret, need not.
func TestManagerRecordsWhatPulled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, _ := newManager(t, dir, "", nil)
	const image, ref = "registry.example/team/app:1", "sha256:" + hex64
	calls := 0

	must, err := m.MustPull(ctx, image, ref, podCreds(pullrecords.PodCredentials{}, &calls))
	require.NoError(t, err)
	assert.False(t, must, "an image the node did not pull: preloaded")
	assert.Zero(t, calls, "the policy decides without the pod's credentials")

	require.NoError(t, m.RecordIntent(image))
	must, err = m.MustPull(ctx, image, ref, podCreds(pullrecords.PodCredentials{}, &calls))
	require.NoError(t, err)
	assert.True(t, must, "a pull under way: pulled by the node, with credentials not yet known")
	m.RecordPulled(image, ref, pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}})
	ok, err := openStore(t, dir).IntentExists(image)
	require.NoError(t, err)
	assert.False(t, ok, "the intent ends with the pull")

	must, err = m.MustPull(ctx, image, ref, podCreds(pullrecords.PodCredentials{}, &calls))
	require.NoError(t, err)
	assert.True(t, must, "a pod without the secret")
	assert.Equal(t, 1, calls)
	must, err = m.MustPull(ctx, image, ref, podCreds(pullrecords.PodCredentials{Secrets: []pullrecords.Secret{s1}}, &calls))
	require.NoError(t, err)
	assert.False(t, must, "the pod whose secret pulled it")
	must, err = m.MustPull(ctx, image, ref, podCreds(pullrecords.PodCredentials{Secrets: []pullrecords.Secret{s1Other}}, &calls))
	require.NoError(t, err)
	assert.False(t, must, "another secret with the same credentials")
	assert.Equal(t, 3, calls)

	r, _, err := openStore(t, dir).Record(ref)
	require.NoError(t, err)
	assert.Equal(t, &pullrecords.Record{ImageRef: ref, LastUpdated: t0, Credentials: map[string]pullrecords.Credentials{
		"registry.example/team/app": {Secrets: []pullrecords.Secret{s1, s1Other}},
	}}, r, "the other secret is remembered")

	// A failed lookup of the pod's credentials is MustPull's error.
	boom := errors.New("secret does not parse")
	must, err = m.MustPull(ctx, image, ref, func() (pullrecords.PodCredentials, error) { return pullrecords.PodCredentials{}, boom })
	assert.ErrorIs(t, err, boom)
	assert.True(t, must)
}

// Pulls of one image at once share its intent: it goes when the last
// ends, a failure or not.
func TestManagerIntentsCount(t *testing.T) {
	dir := t.TempDir()
	m, _ := newManager(t, dir, pullrecords.AlwaysVerify, nil)
	s := openStore(t, dir)
	exists := func() bool {
		ok, err := s.IntentExists("app:1")
		require.NoError(t, err)
		return ok
	}
	require.NoError(t, m.RecordIntent("app:1"))
	require.NoError(t, m.RecordIntent("app:1"))
	m.RecordFailed("app:1")
	assert.True(t, exists(), "one pull still under way")
	m.RecordPulled("app:1", "ref", pullrecords.Credentials{NodePodsAccessible: true})
	assert.False(t, exists())
	must, err := m.MustPull(context.Background(), "app:2", "ref", nil)
	require.NoError(t, err)
	assert.False(t, must, "no credentials pulled it: every pod may use it, under any name")
	must, err = m.MustPull(context.Background(), "app:1", "ref", nil)
	require.NoError(t, err)
	assert.False(t, must)
	must, err = m.MustPull(context.Background(), "registry.example/app:1", "ref", nil)
	require.NoError(t, err)
	assert.True(t, must, "another name of the same image: no record for it")
}

// Open, as upstream's kubelet at start: the files of v1alpha1 are
// rewritten as v1beta1, and an intent whose image the runtime has under
// that very reference becomes a record of no credentials.
func TestManagerOpenFinishesInterruptedPulls(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "upstream"))
	present := images{
		{Id: "sha256:4444444444444444444444444444444444444444444444444444444444444444", RepoTags: []string{"private.registry.example/team/app:2"}},
		{Id: "sha256:5555555555555555555555555555555555555555555555555555555555555555", RepoTags: []string{"docker.io/library/busybox:1.36"}},
	}
	m, _ := newManager(t, dir, "", present)
	s := openStore(t, dir)
	intents, old, err := s.Intents()
	require.NoError(t, err)
	assert.Equal(t, []string{"busybox:1.36"}, intents, "busybox:1.36 is not docker.io/library/busybox:1.36: its intent stays")
	assert.Equal(t, []bool{false}, old, "rewritten as v1beta1")
	r, ok, err := s.Record("sha256:4444444444444444444444444444444444444444444444444444444444444444")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, r.Credentials, "what pulled it is unknown")
	assert.Equal(t, t0, r.LastUpdated)
	_, old, err = s.Records()
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false, false}, old)

	calls := 0
	must, err := m.MustPull(context.Background(), "private.registry.example/team/app:2", "sha256:4444444444444444444444444444444444444444444444444444444444444444", podCreds(pullrecords.PodCredentials{Secrets: []pullrecords.Secret{s1}}, &calls))
	require.NoError(t, err)
	assert.True(t, must, "every pod must show its credentials")
	must, err = m.MustPull(context.Background(), "busybox:1.36", "sha256:5555555555555555555555555555555555555555555555555555555555555555", nil)
	require.NoError(t, err)
	assert.True(t, must, "an intent of the image: pulled by the node")
	must, err = m.MustPull(context.Background(), "private.registry.example/team/app:1", upstreamRef, podCreds(pullrecords.PodCredentials{Secrets: []pullrecords.Secret{{
		Namespace: "team-a", Name: "regcred", UID: "8a1c7d2e-0001", CredentialHash: "2f7c6e0b8f2a9c0d7f4a1e3b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d"}}}, &calls))
	require.NoError(t, err)
	assert.False(t, must, "upstream's record honoured")
}

// A record that cannot be read, or a manager not open, means a pull, even
// under NeverVerify; an intent cannot be recorded before Open.
func TestManagerFailsSafe(t *testing.T) {
	dir := t.TempDir()
	m, _ := newManager(t, dir, pullrecords.NeverVerify, nil)
	must, err := m.MustPull(context.Background(), "app:1", "ref", nil)
	require.NoError(t, err)
	assert.False(t, must)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pulled", "sha256-"+sha256Hex("ref")), []byte("{"), 0o600))
	must, err = m.MustPull(context.Background(), "app:1", "ref", nil)
	require.NoError(t, err)
	assert.True(t, must)
	// Written over by the next pull.
	require.NoError(t, m.RecordIntent("app:1"))
	m.RecordPulled("app:1", "ref", pullrecords.Credentials{NodePodsAccessible: true})
	must, err = m.MustPull(context.Background(), "app:1", "ref", nil)
	require.NoError(t, err)
	assert.False(t, must)

	closed, err := pullrecords.New(pullrecords.Options{Dir: t.TempDir(), Policy: pullrecords.NeverVerify})
	require.NoError(t, err)
	must, err = closed.MustPull(context.Background(), "app:1", "ref", nil)
	require.NoError(t, err)
	assert.True(t, must)
	assert.ErrorIs(t, closed.RecordIntent("app:1"), pullrecords.ErrNotOpen)
}

func TestManagerPrune(t *testing.T) {
	dir := t.TempDir()
	m, clk := newManager(t, dir, "", nil)
	for _, ref := range []string{"kept", "gone"} {
		require.NoError(t, m.RecordIntent("app:"+ref))
		m.RecordPulled("app:"+ref, ref, pullrecords.Credentials{NodePodsAccessible: true})
	}
	clk.SetTime(t0.Add(10*time.Minute + 500*time.Millisecond))
	began := clk.Now()
	require.NoError(t, m.RecordIntent("app:new"))
	m.RecordPulled("app:new", "new", pullrecords.Credentials{NodePodsAccessible: true}) // during the pass: the listing may have missed it
	m.Prune(context.Background(), []string{"kept"}, began)
	records, _, err := openStore(t, dir).Records()
	require.NoError(t, err)
	var refs []string
	for _, r := range records {
		refs = append(refs, r.ImageRef)
	}
	assert.ElementsMatch(t, []string{"kept", "new"}, refs)
}

func TestNewRefusesBadOptions(t *testing.T) {
	_, err := pullrecords.New(pullrecords.Options{})
	assert.ErrorIs(t, err, pullrecords.ErrInvalidOptions)
	_, err = pullrecords.New(pullrecords.Options{Dir: "d", Policy: "Sometimes"})
	assert.ErrorIs(t, err, pullrecords.ErrInvalidOptions)
	_, err = pullrecords.New(pullrecords.Options{Dir: "d", Allowlist: []string{"registry.example/*"}})
	assert.ErrorIs(t, err, pullrecords.ErrInvalidOptions, "an allowlist beside the default policy")
	m, err := pullrecords.New(pullrecords.Options{Dir: "d"})
	require.NoError(t, err)
	assert.Equal(t, pullrecords.NeverVerifyPreloadedImages, m.Policy())
	_, err = os.Stat("d")
	assert.True(t, os.IsNotExist(err), "New touches no disk")
}

func openStore(t *testing.T, dir string) *pullrecords.Store {
	t.Helper()
	s, err := pullrecords.OpenStore(dir)
	require.NoError(t, err)
	return s
}

// A Manager is safe for concurrent use (run with -race).
func TestManagerConcurrent(t *testing.T) {
	m, _ := newManager(t, t.TempDir(), pullrecords.AlwaysVerify, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			image := fmt.Sprintf("app:%d", i%2)
			for range 20 {
				require.NoError(t, m.RecordIntent(image))
				_, err := m.MustPull(context.Background(), image, "ref", func() (pullrecords.PodCredentials, error) {
					return pullrecords.PodCredentials{Secrets: []pullrecords.Secret{s1}}, nil
				})
				require.NoError(t, err)
				m.RecordPulled(image, "ref", pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}})
			}
		})
	}
	wg.Wait()
	must, err := m.MustPull(context.Background(), "app:1", "ref", func() (pullrecords.PodCredentials, error) {
		return pullrecords.PodCredentials{Secrets: []pullrecords.Secret{s1}}, nil
	})
	require.NoError(t, err)
	assert.False(t, must)
}
