package apiserver

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NeededAccess lists what the adapters of nodeName do on the API server, one
// SelfSubjectAccessReview each: pods (the source, mirror pods, status and
// deletion), the Node and its status, its Lease in kube-node-lease, events,
// the configMaps and secrets of volumes, and service account tokens.
func NeededAccess(nodeName string) []authorizationv1.ResourceAttributes {
	ra := func(group, resource, sub, verb, ns, name string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: group, Resource: resource, Subresource: sub, Verb: verb, Namespace: ns, Name: name}
	}
	return []authorizationv1.ResourceAttributes{
		ra("", "pods", "", "list", "", ""),
		ra("", "pods", "", "watch", "", ""),
		ra("", "pods", "", "get", "", ""),
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
		ra("", "configmaps", "", "get", "", ""),
		ra("", "secrets", "", "get", "", ""),
		ra("", "serviceaccounts", "token", "create", "", ""),
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
