//go:build apiserver

package apiserver_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/server"
)

// The node's own credentials review tokens and access, as upstream kubelet
// does with its kubeconfig: the node token of the control plane's env file
// is the node, a made-up token is refused; the admin may use the kubelet
// API (nodes/proxy), and so may the API server's kubelet client
// (hack/controlplane-start.sh binds it to system:kubelet-api-admin), while
// a user without RBAC gets no opinion, which the kubelet answers 403.
func TestWebhookAuthAPIServer(t *testing.T) {
	_, node, nodeName := apiEnv(t)
	nodeToken, adminToken := os.Getenv("KK_NODE_TOKEN"), os.Getenv("KK_APISERVER_TOKEN")
	require.NotEmpty(t, nodeToken, "KK_NODE_TOKEN is not set: source the control plane's env file")
	require.NotEmpty(t, adminToken, "KK_APISERVER_TOKEN is not set: source the control plane's env file")

	authn, err := apiserver.NewTokenReviewAuthenticator(node.AuthenticationV1(), apiserver.TokenReviewOptions{})
	require.NoError(t, err)
	authz, err := apiserver.NewSubjectAccessReviewAuthorizer(node.AuthorizationV1(), apiserver.SubjectAccessReviewOptions{})
	require.NoError(t, err)

	r := request("Authorization", "Bearer "+nodeToken)
	nodeUser, ok, err := authn.AuthenticateRequest(r)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "system:node:"+nodeName, nodeUser.Name)
	assert.Subset(t, nodeUser.Groups, []string{"system:nodes", "system:authenticated"})
	assert.Empty(t, r.Header.Get("Authorization"), "the token goes no further")

	adminUser, ok, err := authn.AuthenticateToken(context.Background(), adminToken)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "kubeletkit-admin", adminUser.Name)
	assert.Contains(t, adminUser.Groups, "system:masters")

	_, ok, err = authn.AuthenticateRequest(request("Authorization", "Bearer not-a-token-"+rand.String(8)))
	assert.False(t, ok)
	assert.ErrorIs(t, err, apiserver.ErrInvalidToken)

	proxy := func(u *server.User) server.Attributes {
		return server.Attributes{User: u, Verb: "create", APIVersion: "v1", Resource: "nodes", Subresource: "proxy",
			Name: nodeName, Path: "/exec/default/p/c"}
	}
	for _, tc := range []struct {
		name string
		user *server.User
		want server.Decision
	}{
		{name: "admin", user: adminUser, want: server.DecisionAllow},
		{name: "the API server's kubelet client", user: &server.User{Name: "kube-apiserver-kubelet-client",
			Groups: []string{"system:authenticated"}}, want: server.DecisionAllow},
		{name: "no RBAC", user: &server.User{Name: "kk-nobody-" + rand.String(8), Groups: []string{"system:authenticated"}},
			want: server.DecisionNoOpinion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := authz.Authorize(context.Background(), proxy(tc.user))
			require.NoError(t, err)
			assert.Equal(t, tc.want, d, "reason %q", reason)
		})
	}
}
