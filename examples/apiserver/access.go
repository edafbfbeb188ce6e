package apiserver

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NeededAccess lists what the adapters of nodeName do on the API server that
// can be checked ahead, one SelfSubjectAccessReview each: listing and
// watching the node's pods (with the spec.nodeName field selector, which the
// Node authorizer requires), creating and deleting mirror pods, patching pod
// statuses, the Node and its status, its Lease in kube-node-lease,
// events, and listing and watching services. Reading a pod, the configMaps
// and secrets of volumes, the ResourceClaims of pods and creating service
// account tokens are authorized per object (the Node authorizer
// allows only those of pods bound to the node), so they cannot be reviewed
// in general; a refusal there is reported where it happens, on the pod
// (FailedMount) and in the log.
func NeededAccess(nodeName string) []authorizationv1.ResourceAttributes {
	ra := func(group, resource, sub, verb, ns, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: group, Resource: resource, Subresource: sub, Verb: verb, Namespace: ns, Name: name}
	}
	onNode := func(a authorizationv1.ResourceAttributes) authorizationv1.ResourceAttributes {
		a.FieldSelector = &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{nodeName}}}}
		return a
	}
	return []authorizationv1.ResourceAttributes{
		onNode(ra("", "pods", "", "list", "", "")),
		onNode(ra("", "pods", "", "watch", "", "")),
		ra("", "pods", "", "create", "", ""),
		ra("", "pods", "", "delete", "", ""),
		ra("", "pods", "status", "patch", "", ""),
		ra("", "nodes", "", "create", "", ""),
		ra("", "nodes", "", "get", "", nodeName),
		ra("", "nodes", "", "patch", "", nodeName),
		ra("", "nodes", "status", "patch", "", nodeName),
		ra("coordination.k8s.io", "leases", "", "get", "kube-node-lease", nodeName),
		ra("coordination.k8s.io", "leases", "", "create", "kube-node-lease", ""),
		ra("coordination.k8s.io", "leases", "", "update", "kube-node-lease", nodeName),
		ra("", "events", "", "create", "", ""),
		ra("", "events", "", "patch", "", ""),
		ra("", "services", "", "list", "", ""),
		ra("", "services", "", "watch", "", ""),
	}
}

// CheckAccess asks the API server, with a SelfSubjectAccessReview for each
// of NeededAccess(nodeName), whether the agent's credentials may do what
// the adapters do. A refusal is an error wrapping ErrAccessDenied that names
// every denied verb and resource with the server's reason, so a missing
// RBAC rule is reported clearly at start rather than as scattered
// Forbidden errors later. A review that fails is an error too.
func CheckAccess(ctx context.Context, client kubernetes.Interface, nodeName string) error {
	if client == nil {
		return fmt.Errorf("check access: client is nil: %w", ErrInvalidArgument)
	}
	var denied []string
	for _, ra := range NeededAccess(nodeName) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra}}
		got, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("check access %s: %w", describeAccess(ra), err)
		}
		if !got.Status.Allowed || got.Status.Denied {
			d := describeAccess(ra)
			if got.Status.Reason != "" {
				d += " (" + got.Status.Reason + ")"
			}
			denied = append(denied, d)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("check access: %d of %d denied: %s: %w", len(denied), len(NeededAccess(nodeName)), strings.Join(denied, "; "), ErrAccessDenied)
	}
	return nil
}

// describeAccess reads like "patch pods/status" or
// "get leases.coordination.k8s.io kube-node-lease/node-1".
func describeAccess(ra authorizationv1.ResourceAttributes) string {
	var b strings.Builder
	b.WriteString(ra.Verb)
	b.WriteByte(' ')
	b.WriteString(ra.Resource)
	if ra.Group != "" {
		b.WriteString("." + ra.Group)
	}
	if ra.Subresource != "" {
		b.WriteString("/" + ra.Subresource)
	}
	switch {
	case ra.Namespace != "" && ra.Name != "":
		b.WriteString(" " + ra.Namespace + "/" + ra.Name)
	case ra.Namespace != "":
		b.WriteString(" in " + ra.Namespace)
	case ra.Name != "":
		b.WriteString(" " + ra.Name)
	}
	return b.String()
}
