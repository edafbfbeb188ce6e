package apiserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

func TestCheckAccess(t *testing.T) {
	type key struct{ verb, resource, sub string }
	tests := []struct {
		name       string
		deny       map[key]string // denied, with the reason
		reviewErr  error
		wantErrIs  error
		wantInText []string
	}{
		{name: "everything allowed"},
		{
			name:      "two verbs denied",
			deny:      map[key]string{{"patch", "pods", "status"}: "no RBAC rule", {"get", "leases", ""}: ""},
			wantErrIs: apiserver.ErrAccessDenied,
			wantInText: []string{
				"2 of 16 denied",
				"patch pods/status (no RBAC rule)",
				"get leases.coordination.k8s.io kube-node-lease/n1",
			},
		},
		{name: "the review fails", reviewErr: apierrors.NewForbidden(authorizationv1.Resource("selfsubjectaccessreviews"), "", assert.AnError), wantInText: []string{"check access list pods"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if tt.reviewErr != nil {
					return true, nil, tt.reviewErr
				}
				r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
				ra := r.Spec.ResourceAttributes
				reason, denied := tt.deny[key{ra.Verb, ra.Resource, ra.Subresource}]
				r.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: !denied, Reason: reason}
				return true, r, nil
			})
			err := apiserver.CheckAccess(t.Context(), client, "n1")
			if tt.wantErrIs == nil && tt.wantInText == nil {
				require.NoError(t, err)
				assert.Equal(t, len(apiserver.NeededAccess("n1")), count(client.Actions(), "create", "selfsubjectaccessreviews", ""))
				return
			}
			require.Error(t, err)
			if tt.wantErrIs != nil {
				assert.ErrorIs(t, err, tt.wantErrIs)
			}
			for _, s := range tt.wantInText {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
	assert.ErrorIs(t, apiserver.CheckAccess(t.Context(), nil, "n1"), apiserver.ErrInvalidArgument)
}

// The node's pods are reviewed with the field selector the Node authorizer
// requires; per-object reads are not reviewed ahead.
func TestNeededAccessIsNodeShaped(t *testing.T) {
	for _, ra := range apiserver.NeededAccess("n1") {
		if ra.Resource == "pods" && (ra.Verb == "list" || ra.Verb == "watch") {
			require.NotNil(t, ra.FieldSelector, ra.Verb)
			assert.Equal(t, "spec.nodeName", ra.FieldSelector.Requirements[0].Key)
			assert.Equal(t, []string{"n1"}, ra.FieldSelector.Requirements[0].Values)
		}
		assert.NotContains(t, []string{"configmaps", "secrets", "serviceaccounts"}, ra.Resource)
	}
}
