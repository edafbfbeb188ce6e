package apiserver_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/volume"
)

var errUnreachable = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

func newState(t *testing.T) *localstate.State {
	t.Helper()
	st, err := localstate.New(localstate.NewMemory(0))
	require.NoError(t, err)
	return st
}

func keptNames(t *testing.T, st *localstate.State) []string {
	t.Helper()
	pods, err := st.Pods()
	require.NoError(t, err)
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.ResourceVersion)
	}
	return out
}

// unreachable makes every request of verb on resource fail as a refused
// connection while the returned flag is set.
func unreachable(client *fake.Clientset, verb, resource string) *atomic.Bool {
	down := &atomic.Bool{}
	down.Store(true)
	client.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errUnreachable
		}
		return false, nil, nil
	})
	return down
}

func TestPodSourceServesTheLocalStateWhenTheFirstListFails(t *testing.T) {
	st := newState(t)
	a, b := apiPod("ns", "a", "ua", "n1"), apiPod("ns", "b", "ub", "n1")
	a.ResourceVersion, b.ResourceVersion = "1", "1"
	_, err := st.SetPods([]*v1.Pod{a, b})
	require.NoError(t, err)

	// Meanwhile b was deleted and c bound to the node.
	a2 := a.DeepCopy()
	a2.ResourceVersion = "2"
	c := apiPod("ns", "c", "uc", "n1")
	client := fake.NewClientset(a2, c)
	down := unreachable(client, "list", "pods")
	out := make(chan syncloop.PodUpdate)
	s, err := apiserver.NewPodSource(client, "n1", out, apiserver.PodSourceOptions{Backoff: fastBackoff, LocalState: st})
	require.NoError(t, err)
	runSource(t, s)

	assert.Equal(t, []string{"a@1", "b@1"}, recvSet(t, out), "the kept pods, as the API source's SET")
	on, n, _ := s.FromLocalState()
	assert.True(t, on)
	assert.Equal(t, 2, n)
	select {
	case <-s.Listed():
		t.Fatal("Listed before the API server answered")
	default:
	}

	down.Store(false)
	assert.Equal(t, []string{"a@2", "c@"}, recvSet(t, out), "the server's list replaces the kept pods whole")
	<-s.Listed()
	on, _, _ = s.FromLocalState()
	assert.False(t, on)
	assert.Equal(t, []string{"a@2", "c@"}, keptNames(t, st), "the local state follows the server")
}

func TestPodSourceServesTheLocalStateWhenTheFirstListIsLate(t *testing.T) {
	st := newState(t)
	a := apiPod("ns", "a", "ua", "n1")
	_, err := st.SetPods([]*v1.Pod{a})
	require.NoError(t, err)
	client := fake.NewClientset(a)
	release := make(chan struct{})
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release // a server that accepted the connection and says nothing
		return false, nil, nil
	})
	clk := clocktesting.NewFakeClock(time.Now())
	out := make(chan syncloop.PodUpdate)
	s, err := apiserver.NewPodSource(client, "n1", out, apiserver.PodSourceOptions{Clock: clk, LocalState: st, LocalStateAfter: 5 * time.Second})
	require.NoError(t, err)
	runSource(t, s)
	t.Cleanup(func() { close(release) }) // runs before runSource's cleanup

	require.Eventually(t, clk.HasWaiters, waitFor, time.Millisecond)
	clk.Step(4 * time.Second)
	select {
	case <-out:
		t.Fatal("served the local state before LocalStateAfter")
	default:
	}
	clk.Step(time.Second)
	assert.Equal(t, []string{"a@"}, recvSet(t, out))
	on, _, _ := s.FromLocalState()
	assert.True(t, on)
}

func TestPodSourceWithAnAnsweringServerNeverServesTheLocalState(t *testing.T) {
	st := newState(t)
	old := apiPod("ns", "old", "uo", "n1")
	_, err := st.SetPods([]*v1.Pod{old})
	require.NoError(t, err)
	client := fake.NewClientset(apiPod("ns", "a", "ua", "n1"))
	out := make(chan syncloop.PodUpdate)
	s, err := apiserver.NewPodSource(client, "n1", out, apiserver.PodSourceOptions{Backoff: fastBackoff, LocalState: st})
	require.NoError(t, err)
	runSource(t, s)
	assert.Equal(t, []string{"a@"}, recvSet(t, out))
	assert.Equal(t, []string{"a@"}, keptNames(t, st))

	// A watch event is written through; a deleted pod is forgotten, with
	// its tokens.
	exp := int64(600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "a", UID: "ua"}}}
	require.NoError(t, st.PutToken(localstate.TokenKey("ns", "default", req), &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "t"}}))
	// The fake clientset's watch sees only what happens after it starts.
	require.Eventually(t, func() bool { return count(client.Actions(), "watch", "pods", "") >= 1 }, waitFor, time.Millisecond)
	require.NoError(t, client.CoreV1().Pods("ns").Delete(t.Context(), "a", metav1.DeleteOptions{}))
	assert.Equal(t, []string{}, recvSet(t, out))
	assert.Equal(t, []string{}, keptNames(t, st))
	_, ok, err := st.Token(localstate.TokenKey("ns", "default", req))
	require.NoError(t, err)
	assert.False(t, ok, "the token of a pod no longer bound is forgotten")
	on, _, _ := s.FromLocalState()
	assert.False(t, on)
}

func TestStatusSinkKeepsWhatTheServerDidNotAcknowledge(t *testing.T) {
	st := newState(t)
	web, job, gone := apiPod("ns", "web", "u1", "n1"), apiPod("ns", "job", "u2", "n1"), apiPod("ns", "gone", "u3", "n1")
	client := fake.NewClientset(web, job, gone)
	down := unreachable(client, "patch", "pods")
	sink, err := apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{Retry: fastRetry, LocalState: st})
	require.NoError(t, err)
	ctx := t.Context()
	for _, p := range []*v1.Pod{web, job, gone} {
		_, err := sink.UpdatePodStatus(ctx, p, v1.PodStatus{Phase: v1.PodRunning})
		require.Error(t, err)
	}
	_, err = sink.UpdatePodStatus(ctx, job, v1.PodStatus{Phase: v1.PodSucceeded, Message: "done"})
	require.Error(t, err)
	kept, err := st.PodStatuses()
	require.NoError(t, err)
	require.Len(t, kept, 3)

	// The agent restarts (a new sink on the same state) and the server
	// comes back; meanwhile "gone" was deleted, and the restarted status
	// manager has sent web's newer status first.
	down.Store(false)
	require.NoError(t, client.CoreV1().Pods("ns").Delete(ctx, "gone", metav1.DeleteOptions{}))
	sink, err = apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{Retry: fastRetry, LocalState: st})
	require.NoError(t, err)
	_, err = sink.UpdatePodStatus(ctx, web, v1.PodStatus{Phase: v1.PodRunning, Message: "newer"})
	require.NoError(t, err)
	client.ClearActions()

	sent, err := sink.Flush(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, sent, "only job's: web's was superseded, gone's pod is gone")
	patches := 0
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetSubresource() == "status" {
			patches++
			assert.Equal(t, "job", p.GetName())
			assert.Contains(t, string(p.GetPatch()), `"uid":"u2"`, "the UID precondition")
		}
	}
	assert.Equal(t, 1, patches)
	got, err := client.CoreV1().Pods("ns").Get(ctx, "job", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1.PodSucceeded, got.Status.Phase, "the last status kept, not the first")
	got, err = client.CoreV1().Pods("ns").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "newer", got.Status.Message, "a kept status never overwrites a newer one")
	kept, err = st.PodStatuses()
	require.NoError(t, err)
	assert.Empty(t, kept)
}

func TestStatusSinkFlushDropsTheStatusOfAReCreatedPod(t *testing.T) {
	st := newState(t)
	old := apiPod("ns", "web", "u-old", "n1")
	require.NoError(t, st.PutPodStatus(old, v1.PodStatus{Phase: v1.PodFailed}))
	client := fake.NewClientset(apiPod("ns", "web", "u-new", "n1"))
	sink, err := apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{Retry: fastRetry, LocalState: st})
	require.NoError(t, err)
	sent, err := sink.Flush(t.Context())
	require.NoError(t, err)
	assert.Zero(t, sent)
	assert.Zero(t, count(client.Actions(), "patch", "pods", "status"), "never patches another pod of the same name")
	kept, _ := st.PodStatuses()
	assert.Empty(t, kept)
}

func TestKeptSources(t *testing.T) {
	st := newState(t)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", UID: "c1", ResourceVersion: "1"}, Data: map[string]string{"k": "v1"}}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pw", UID: "s1", ResourceVersion: "1"}, Data: map[string][]byte{"p": []byte("s3cret")}}
	client := fake.NewClientset(cm, sec)
	vs, err := apiserver.NewVolumeSources(client, apiserver.VolumeSourcesOptions{TTL: -1})
	require.NoError(t, err)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	k, err := apiserver.NewKeptSources(vs.Sources(), st, apiserver.KeptSourcesOptions{Clock: clk})
	require.NoError(t, err)
	src := k.Sources()
	ctx := t.Context()
	exp := int64(3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "p", UID: "up"}}}
	client.PrependReactor("create", "serviceaccounts", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "eyJ.kept-token", ExpirationTimestamp: metav1.NewTime(now.Add(time.Hour))}}, nil
	})

	// Online: read through and kept.
	_, err = src.ConfigMaps.GetConfigMap(ctx, "ns", "cfg")
	require.NoError(t, err)
	_, err = src.Secrets.GetSecret(ctx, "ns", "pw")
	require.NoError(t, err)
	_, err = src.Tokens.GetServiceAccountToken(ctx, "ns", "default", req)
	require.NoError(t, err)

	// Offline: the kept copies.
	for _, r := range []string{"configmaps", "secrets", "serviceaccounts"} {
		verb := "get"
		if r == "serviceaccounts" {
			verb = "create"
		}
		unreachable(client, verb, r)
	}
	got, err := src.ConfigMaps.GetConfigMap(ctx, "ns", "cfg")
	require.NoError(t, err)
	assert.Equal(t, "v1", got.Data["k"])
	gotSec, err := src.Secrets.GetSecret(ctx, "ns", "pw")
	require.NoError(t, err)
	assert.Equal(t, "s3cret", string(gotSec.Data["p"]))
	tr, err := src.Tokens.GetServiceAccountToken(ctx, "ns", "default", req)
	require.NoError(t, err)
	assert.Equal(t, "eyJ.kept-token", tr.Status.Token, "a kept token before its expiry")
	_, err = src.ConfigMaps.GetConfigMap(ctx, "ns", "never-read")
	assert.ErrorIs(t, err, errUnreachable, "nothing kept: the server's silence")

	// Past its expiry the kept token is refused, never served.
	clk.SetTime(now.Add(time.Hour))
	_, err = src.Tokens.GetServiceAccountToken(ctx, "ns", "default", req)
	require.ErrorIs(t, err, apiserver.ErrTokenExpired)
	assert.Contains(t, err.Error(), "expired at 2026-01-01T01:00:00Z")
	assert.NotContains(t, err.Error(), "eyJ", "the token is never in an error")
}

func TestKeptSourcesHonourTheServersAnswers(t *testing.T) {
	st := newState(t)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", UID: "c1", ResourceVersion: "1"}}
	require.NoError(t, st.PutConfigMap(cm))
	client := fake.NewClientset()
	vs, err := apiserver.NewVolumeSources(client, apiserver.VolumeSourcesOptions{TTL: -1})
	require.NoError(t, err)
	k, err := apiserver.NewKeptSources(vs.Sources(), st, apiserver.KeptSourcesOptions{})
	require.NoError(t, err)
	forbidden := &atomic.Bool{}
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if forbidden.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "cfg", errors.New("no relationship found between node and this object"))
		}
		return false, nil, nil
	})
	forbidden.Store(true)
	_, err = k.GetConfigMap(t.Context(), "ns", "cfg")
	assert.True(t, apierrors.IsForbidden(err), "a refusal is the server's answer: %v", err)
	forbidden.Store(false)
	_, err = k.GetConfigMap(t.Context(), "ns", "cfg")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, ok, err := st.ConfigMap("ns", "cfg")
	require.NoError(t, err)
	assert.False(t, ok, "a configMap the server says is gone is forgotten")
	_, err = apiserver.NewKeptSources(volume.Sources{}, nil, apiserver.KeptSourcesOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	none, err := apiserver.NewKeptSources(volume.Sources{}, st, apiserver.KeptSourcesOptions{})
	require.NoError(t, err)
	assert.Equal(t, volume.Sources{}, none.Sources(), "no inner source, no kept one")
}

func TestServicesFromTheLocalStateUntilTheFirstList(t *testing.T) {
	st := newState(t)
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", UID: "s1", ResourceVersion: "1"}}
	client := fake.NewClientset(svc)
	s, err := apiserver.NewServices(client, apiserver.ServicesOptions{LocalState: st})
	require.NoError(t, err)
	_, err = s.ListServices()
	require.ErrorIs(t, err, apiserver.ErrServicesNotSynced, "nothing kept, nothing listed: upstream's refusal")

	runUntilEnd(t, s.Run)
	require.Eventually(t, func() bool { got, _ := st.Services(); return len(got) == 1 }, waitFor, time.Millisecond, "the list is kept")

	// A restarted node whose API server does not answer.
	client2 := fake.NewClientset()
	unreachable(client2, "list", "services")
	s2, err := apiserver.NewServices(client2, apiserver.ServicesOptions{LocalState: st})
	require.NoError(t, err)
	got, err := s2.ListServices()
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "kubernetes", got[0].Name)
}

func TestPodSourceWithNothingKeptWaitsForTheAPIServer(t *testing.T) {
	st := newState(t)
	client := fake.NewClientset(apiPod("ns", "a", "ua", "n1"))
	down := unreachable(client, "list", "pods")
	clk := clocktesting.NewFakeClock(time.Now())
	out := make(chan syncloop.PodUpdate)
	s, err := apiserver.NewPodSource(client, "n1", out, apiserver.PodSourceOptions{Clock: clk, Backoff: fastBackoff, LocalState: st})
	require.NoError(t, err)
	runSource(t, s)
	require.Eventually(t, func() bool { return count(client.Actions(), "list", "pods", "") >= 2 }, waitFor, time.Millisecond, "the first lists fail")
	select {
	case u := <-out:
		t.Fatalf("sent %d pods from an empty local state: housekeeping would kill whatever runs", len(u.Pods))
	default:
	}
	on, _, _ := s.FromLocalState()
	assert.False(t, on)
	down.Store(false)
	assert.Equal(t, []string{"a@"}, recvSet(t, out))
}
