package apiserver

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeletkit/kubeletkit/dra"
)

// ResourceSlices deletes the node's ResourceSlices on the API server
// (resource.k8s.io/v1) as upstream's kubelet does, one DeleteCollection
// with the field selector spec.nodeName=<node> and, for one driver,
// spec.driver=<driver>: agent.ClusterOptions.ResourceSlices, which
// Joined.Apply sets. The agent deletes them all as it starts and a DRA
// driver's once it has had no connected kubelet plugin for 30 seconds
// (package dra). The Node authorizer lets a node delete only its own
// slices, with that field selector. Safe for concurrent use.
type ResourceSlices struct {
	client   kubernetes.Interface
	nodeName string
}

var _ dra.ResourceSlices = (*ResourceSlices)(nil)

// NewResourceSlices returns the deleter of nodeName's ResourceSlices on
// client's API server.
func NewResourceSlices(client kubernetes.Interface, nodeName string) *ResourceSlices {
	return &ResourceSlices{client: client, nodeName: nodeName}
}

// DeleteResourceSlices deletes the node's ResourceSlices of driver, or of
// every driver when driver is "", and returns the API server's error
// (package dra retries it; NotFound counts as done).
func (s *ResourceSlices) DeleteResourceSlices(ctx context.Context, driver string) error {
	return s.client.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{FieldSelector: resourceSliceSelector(s.nodeName, driver).String()})
}

// resourceSliceSelector selects the ResourceSlices of node, and of driver
// unless it is "".
func resourceSliceSelector(node, driver string) fields.Set {
	set := fields.Set{resourcev1.ResourceSliceSelectorNodeName: node}
	if driver != "" {
		set[resourcev1.ResourceSliceSelectorDriver] = driver
	}
	return set
}
