package nodetest_test

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// The sink stores the lease like an API server: a stale resourceVersion is
// a conflict.
func Example() {
	ctx := context.Background()
	sink := &nodetest.Sink{}
	_, err := sink.GetLease(ctx, "kube-node-lease", "node1")
	fmt.Println(errors.Is(err, node.ErrLeaseNotFound))
	l, _ := sink.CreateLease(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node1"}})
	_, err = sink.UpdateLease(ctx, l)
	fmt.Println(err)
	_, err = sink.UpdateLease(ctx, l)
	fmt.Println(err)
	// Output:
	// true
	// <nil>
	// update lease: conflict: resourceVersion 1, have 2
}
