package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// runWatching runs s until the test ends and checks that Run returns.
func runWatching(t *testing.T, s *apiserver.WatchingSources) context.CancelFunc {
	return runUntilEnd(t, s.Run)
}

func TestWatchingSources(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v1"}}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pw"}, Data: map[string][]byte{"p": []byte("x")}}
	client := fake.NewClientset(cm, sec)
	s, err := apiserver.NewWatchingSources(client, apiserver.WatchingSourcesOptions{Backoff: fastBackoff})
	require.NoError(t, err)

	_, err = s.GetConfigMap(t.Context(), "ns", "cfg")
	require.ErrorIs(t, err, apiserver.ErrNotRunning, "reads need Run")
	runWatching(t, s)
	// Run sets itself up in its goroutine: wait until reads work.
	require.Eventually(t, func() bool {
		_, err := s.GetConfigMap(t.Context(), "ns", "cfg")
		return err == nil
	}, waitFor, time.Millisecond)

	got, err := s.GetConfigMap(t.Context(), "ns", "cfg")
	require.NoError(t, err)
	assert.Equal(t, "v1", got.Data["k"])
	gotSec, err := s.GetSecret(t.Context(), "ns", "pw")
	require.NoError(t, err)
	assert.Equal(t, "x", string(gotSec.Data["p"]))
	assert.Equal(t, 2, s.Watched())

	_, err = s.GetConfigMap(t.Context(), "ns", "missing")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = s.GetSecret(t.Context(), "ns", "cfg")
	assert.True(t, apierrors.IsNotFound(err), "a secret is not a configMap: %v", err)
	assert.Equal(t, 4, s.Watched())

	// One object, one list with its name as field selector.
	for _, a := range client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "configmaps" {
			f := l.GetListRestrictions().Fields.String()
			assert.Contains(t, []string{"metadata.name=cfg", "metadata.name=missing"}, f)
		}
	}
	lists := count(client.Actions(), "list", "configmaps", "")
	assert.Equal(t, 2, lists)

	// A change arrives through the watch, without another list.
	cm2 := cm.DeepCopy()
	cm2.Data["k"] = "v2"
	_, err = client.CoreV1().ConfigMaps("ns").Update(t.Context(), cm2, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := s.GetConfigMap(t.Context(), "ns", "cfg")
		return err == nil && got.Data["k"] == "v2"
	}, waitFor, time.Millisecond)
	// And so does a creation.
	_, err = client.CoreV1().ConfigMaps("ns").Create(t.Context(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "missing"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := s.GetConfigMap(t.Context(), "ns", "missing")
		return err == nil
	}, waitFor, time.Millisecond)
	assert.Equal(t, lists, count(client.Actions(), "list", "configmaps", ""))
}

func TestWatchingSourcesStopsIdleWatches(t *testing.T) {
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}})
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := apiserver.NewWatchingSources(client, apiserver.WatchingSourcesOptions{Clock: clk, Idle: time.Minute})
	require.NoError(t, err)
	runWatching(t, s)
	require.Eventually(t, clk.HasWaiters, waitFor, time.Millisecond, "Run's ticker")
	require.Eventually(t, func() bool {
		_, err := s.GetConfigMap(t.Context(), "ns", "cfg")
		return err == nil
	}, waitFor, time.Millisecond)
	require.Equal(t, 1, s.Watched())

	clk.Step(30 * time.Second) // a sweep: read 30s ago, kept
	_, err = s.GetConfigMap(t.Context(), "ns", "cfg")
	require.NoError(t, err)
	clk.Step(30 * time.Second) // a sweep: read 30s ago, kept
	assert.Equal(t, 1, s.Watched())
	clk.Step(30 * time.Second) // a sweep: read 60s ago, dropped
	require.Eventually(t, func() bool { return s.Watched() == 0 }, waitFor, time.Millisecond)

	// Read again, watched again.
	_, err = s.GetConfigMap(t.Context(), "ns", "cfg")
	require.NoError(t, err)
	assert.Equal(t, 1, s.Watched())
}

func TestWatchingSourcesListFails(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("secrets"), "", assert.AnError)
	})
	s, err := apiserver.NewWatchingSources(client, apiserver.WatchingSourcesOptions{SyncTimeout: 20 * time.Millisecond, Backoff: fastBackoff})
	require.NoError(t, err)
	runWatching(t, s)
	require.Eventually(t, func() bool {
		_, err := s.GetSecret(t.Context(), "ns", "pw")
		return apierrors.IsForbidden(err)
	}, waitFor, time.Millisecond, "the list's error is reported after the sync timeout")
	_, err = s.GetSecret(t.Context(), "ns", "pw")
	assert.Contains(t, err.Error(), "secret ns/pw: not listed within 20ms")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = s.GetSecret(ctx, "ns", "other")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestWatchingSourcesArguments(t *testing.T) {
	_, err := apiserver.NewWatchingSources(nil, apiserver.WatchingSourcesOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}
