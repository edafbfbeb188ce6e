package apiserver_test

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/server"
)

// The kubelet API's webhook authentication and authorization: a bearer
// token checked with TokenReview, then what its user asks checked with
// SubjectAccessReview. A fake clientset stands in for the API server: it
// knows one token and lets its user at the node's logs only.
func ExampleNewTokenReviewAuthenticator() {
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if review.Spec.Token == "jane-token" {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
				User: authenticationv1.UserInfo{Username: "jane", Groups: []string{"dev"}}}
		}
		return true, review, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		review.Status.Allowed = review.Spec.User == "jane" && review.Spec.ResourceAttributes.Subresource == "log"
		return true, review, nil
	})
	authn, err := apiserver.NewTokenReviewAuthenticator(client.AuthenticationV1(), apiserver.TokenReviewOptions{})
	if err != nil {
		panic(err)
	}
	authz, err := apiserver.NewSubjectAccessReviewAuthorizer(client.AuthorizationV1(), apiserver.SubjectAccessReviewOptions{})
	if err != nil {
		panic(err)
	}

	r, _ := http.NewRequest(http.MethodGet, "https://node-1:10250/logs/", nil)
	_, ok, err := authn.AuthenticateRequest(r)
	fmt.Println("no token:", ok, err)
	r.Header.Set("Authorization", "Bearer jane-token")
	u, ok, err := authn.AuthenticateRequest(r)
	fmt.Println("jane-token:", ok, err, u.Name, u.Groups)

	for _, sub := range []string{"log", "proxy"} {
		d, _, err := authz.Authorize(context.Background(), server.Attributes{User: u, Verb: "get", APIVersion: "v1",
			Resource: "nodes", Subresource: sub, Name: "node-1"})
		fmt.Println("get nodes/"+sub+":", d == server.DecisionAllow, err)
	}
	// Output:
	// no token: false <nil>
	// jane-token: true <nil> jane [dev system:authenticated]
	// get nodes/log: true <nil>
	// get nodes/proxy: false <nil>
}
