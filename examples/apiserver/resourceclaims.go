package apiserver

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeletkit/kubeletkit/dra"
)

// ResourceClaims reads the ResourceClaims of the node's pods from the API
// server (resource.k8s.io/v1), one GET each time a pod's claims are
// checked, as upstream's DRA manager does: agent.ClusterOptions.ResourceClaims,
// which Joined.Apply sets. The Node authorizer lets a node read only the
// claims of pods bound to it.
type ResourceClaims struct {
	client kubernetes.Interface
}

var _ dra.Claims = (*ResourceClaims)(nil)

// NewResourceClaims returns the claims of client's API server.
func NewResourceClaims(client kubernetes.Interface) *ResourceClaims {
	return &ResourceClaims{client: client}
}

// ResourceClaim returns the claim, or the API server's error (NotFound for
// a claim that does not exist).
func (c *ResourceClaims) ResourceClaim(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
	return c.client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}
