package apiserver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

func TestVolumeSourcesCache(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v1"}}
	sec := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pw"}, Data: map[string][]byte{"p": []byte("s3cret")}}
	client := fake.NewClientset(cm, sec)
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := apiserver.NewVolumeSources(client, apiserver.VolumeSourcesOptions{Clock: clk})
	require.NoError(t, err)
	ctx := t.Context()
	gets := func(resource string) int { return count(client.Actions(), "get", resource, "") }

	got, err := s.GetConfigMap(ctx, "ns", "cfg")
	require.NoError(t, err)
	assert.Equal(t, "v1", got.Data["k"])
	_, err = s.GetConfigMap(ctx, "ns", "cfg")
	require.NoError(t, err)
	assert.Equal(t, 1, gets("configmaps"), "served from the cache within the TTL")

	// A change shows after the TTL.
	cm2 := cm.DeepCopy()
	cm2.Data["k"] = "v2"
	_, err = client.CoreV1().ConfigMaps("ns").Update(ctx, cm2, metav1.UpdateOptions{})
	require.NoError(t, err)
	clk.SetTime(clk.Now().Add(apiserver.DefaultObjectTTL - time.Second))
	got, _ = s.GetConfigMap(ctx, "ns", "cfg")
	assert.Equal(t, "v1", got.Data["k"])
	clk.SetTime(clk.Now().Add(time.Second))
	got, _ = s.GetConfigMap(ctx, "ns", "cfg")
	assert.Equal(t, "v2", got.Data["k"])
	assert.Equal(t, 2, gets("configmaps"))

	// NotFound is apierrors' and is cached too.
	_, err = s.GetConfigMap(ctx, "ns", "missing")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = s.GetConfigMap(ctx, "ns", "missing")
	assert.True(t, apierrors.IsNotFound(err))
	assert.Equal(t, 3, gets("configmaps"))

	// A secret of the same name is another object.
	gotSec, err := s.GetSecret(ctx, "ns", "pw")
	require.NoError(t, err)
	assert.Equal(t, "s3cret", string(gotSec.Data["p"]))
	_, err = s.GetSecret(ctx, "ns", "cfg")
	assert.True(t, apierrors.IsNotFound(err))
	assert.Equal(t, 2, gets("secrets"))

	s.Forget()
	_, err = s.GetSecret(ctx, "ns", "pw")
	require.NoError(t, err)
	assert.Equal(t, 3, gets("secrets"), "Forget empties the cache")
}

func TestVolumeSourcesTransientErrorIsNotCached(t *testing.T) {
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}})
	fail := true
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			fail = false
			return true, nil, apierrors.NewServiceUnavailable("etcd is down")
		}
		return false, nil, nil
	})
	s, err := apiserver.NewVolumeSources(client, apiserver.VolumeSourcesOptions{})
	require.NoError(t, err)
	_, err = s.GetConfigMap(t.Context(), "ns", "cfg")
	require.Error(t, err)
	assert.True(t, apierrors.IsServiceUnavailable(err))
	assert.Contains(t, err.Error(), "configmap ns/cfg")
	_, err = s.GetConfigMap(t.Context(), "ns", "cfg")
	assert.NoError(t, err)
}

func TestVolumeSourcesNoCache(t *testing.T) {
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}})
	s, err := apiserver.NewVolumeSources(client, apiserver.VolumeSourcesOptions{TTL: -1})
	require.NoError(t, err)
	for range 3 {
		_, err := s.GetConfigMap(t.Context(), "ns", "cfg")
		require.NoError(t, err)
	}
	assert.Equal(t, 3, count(client.Actions(), "get", "configmaps", ""))
}

func TestVolumeSourcesToken(t *testing.T) {
	exp := int64(3600)
	bound := func() *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:         []string{"vault"},
			ExpirationSeconds: &exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "u1"},
		}}
	}
	tests := []struct {
		name    string
		req     func() *authenticationv1.TokenRequest
		wantErr error
	}{
		{name: "bound to the pod", req: bound},
		{name: "no request", req: func() *authenticationv1.TokenRequest { return nil }, wantErr: apiserver.ErrInvalidArgument},
		{name: "unbound", req: func() *authenticationv1.TokenRequest { r := bound(); r.Spec.BoundObjectRef = nil; return r }, wantErr: apiserver.ErrInvalidArgument},
		{name: "bound to a secret", req: func() *authenticationv1.TokenRequest { r := bound(); r.Spec.BoundObjectRef.Kind = "Secret"; return r }, wantErr: apiserver.ErrInvalidArgument},
		{name: "bound without a UID", req: func() *authenticationv1.TokenRequest { r := bound(); r.Spec.BoundObjectRef.UID = ""; return r }, wantErr: apiserver.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			var sent *authenticationv1.TokenRequest
			client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
				ca := a.(k8stesting.CreateAction)
				if ca.GetSubresource() != "token" {
					return false, nil, nil
				}
				assert.Equal(t, "sa", ca.(k8stesting.CreateActionImpl).Name)
				sent = ca.GetObject().(*authenticationv1.TokenRequest)
				resp := sent.DeepCopy()
				resp.Status = authenticationv1.TokenRequestStatus{Token: "tok", ExpirationTimestamp: metav1.Now()}
				return true, resp, nil
			})
			s, err := apiserver.NewVolumeSources(client, apiserver.VolumeSourcesOptions{})
			require.NoError(t, err)
			got, err := s.GetServiceAccountToken(t.Context(), "ns", "sa", tt.req())
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Nil(t, sent, "nothing was asked of the API server")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "tok", got.Status.Token)
			require.NotNil(t, sent)
			assert.Equal(t, []string{"vault"}, sent.Spec.Audiences)
			assert.Equal(t, exp, *sent.Spec.ExpirationSeconds)
			assert.Equal(t, "Pod", sent.Spec.BoundObjectRef.Kind)
		})
	}
}

func TestVolumeSourcesNeedsClient(t *testing.T) {
	_, err := apiserver.NewVolumeSources(nil, apiserver.VolumeSourcesOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}
