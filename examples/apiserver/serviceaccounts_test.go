package apiserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// A credential provider plugin's service account and its pod-bound token
// come from the API server: get serviceaccounts, create
// serviceaccounts/token with the request as built.
func TestServiceAccounts(t *testing.T) {
	client := fake.NewClientset(&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "builder", UID: "sa-uid",
		Annotations: map[string]string{"example.com/role": "pull"}}})
	var got []k8stesting.CreateAction
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		got = append(got, a.(k8stesting.CreateAction))
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "eyJ.token"}}, nil
	})
	sas, err := apiserver.NewServiceAccounts(client)
	require.NoError(t, err)

	sa, err := sas.GetServiceAccount(t.Context(), "team", "builder")
	require.NoError(t, err)
	assert.Equal(t, "sa-uid", string(sa.UID))
	assert.Equal(t, "pull", sa.Annotations["example.com/role"])
	_, err = sas.GetServiceAccount(t.Context(), "team", "nobody")
	assert.True(t, apierrors.IsNotFound(err), err)

	req := &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: "sa-uid"}, Spec: authenticationv1.TokenRequestSpec{
		Audiences:      []string{"registry.example"},
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "web-uid"}}}
	tr, err := sas.GetServiceAccountToken(t.Context(), "team", "builder", req)
	require.NoError(t, err)
	assert.Equal(t, "eyJ.token", tr.Status.Token)
	require.Len(t, got, 1)
	assert.Equal(t, "builder", got[0].(k8stesting.CreateActionImpl).Name)
	assert.Equal(t, "token", got[0].GetSubresource())
	assert.Equal(t, "team", got[0].GetNamespace())
	assert.Equal(t, req, got[0].GetObject())

	_, err = sas.GetServiceAccountToken(t.Context(), "team", "builder", &authenticationv1.TokenRequest{})
	require.ErrorIs(t, err, apiserver.ErrInvalidArgument, "a token not bound to a pod")
	assert.Len(t, got, 1)
	_, err = apiserver.NewServiceAccounts(nil)
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}
