package dra

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	// ErrClaimNotCreated is wrapped by PrepareResources' error for a claim
	// of a template that the resourceclaim controller has not made yet (no
	// entry in the pod's status.resourceClaimStatuses).
	ErrClaimNotCreated = errors.New("ResourceClaim not created yet")
	// ErrUnsupportedClaim is wrapped for a pod resource claim that names
	// neither a claim nor a template.
	ErrUnsupportedClaim = errors.New("none of the supported fields are set")
	// ErrNotAllocated is wrapped for a claim the scheduler has not
	// allocated.
	ErrNotAllocated = errors.New("not allocated")
	// ErrDriverNotRegistered is wrapped for a claim allocated a device of
	// a DRA driver the node has not registered: "DRA driver NAME is not
	// registered".
	ErrDriverNotRegistered = errors.New("not registered")
	// ErrNoClaims is wrapped when a claim must be read and the Manager has
	// no Claims to read it from.
	ErrNoClaims = errors.New("no source of ResourceClaims")
)

// Claims gives ResourceClaims by namespace and name, as the API server
// holds them (resource.k8s.io/v1). A claim that does not exist is an error
// (the API server's NotFound).
type Claims interface {
	ResourceClaim(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error)
}

// ClaimsFunc adapts a function to Claims.
type ClaimsFunc func(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error)

// ResourceClaim calls f.
func (f ClaimsFunc) ResourceClaim(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
	return f(ctx, namespace, name)
}

var _ Claims = ClaimsFunc(nil)

// Options configure a Manager. Every zero value is a documented default.
type Options struct {
	// Claims reads the pods' ResourceClaims (an API server's). Nil: none
	// can be read, and a pod with a claim to read is held with an error
	// wrapping ErrNoClaims.
	Claims Claims
}

// Manager prepares the resource claims of pods (see the package doc).
type Manager struct {
	claims Claims
}

// New returns a Manager.
func New(opts Options) (*Manager, error) {
	return &Manager{claims: opts.Claims}, nil
}

// PrepareResources checks and prepares what pod's resource claims give it,
// before its sandbox is created, as upstream's DRA manager does; nil means
// the pod may run. An error says why it may not yet, with upstream's
// message, prefixed "prepare dynamic resources: ": the caller holds the pod
// and tries again at its next sync. Today every claim allocated a device
// fails with ErrDriverNotRegistered, as the node registers no DRA driver.
// The claims are checked in the pod's order, and a claim's drivers in the
// order of its allocation's results (upstream goes through them in a map's
// order, so which of two unregistered drivers it names varies).
func (m *Manager) PrepareResources(ctx context.Context, pod *v1.Pod) error {
	if err := m.prepare(ctx, pod); err != nil {
		return fmt.Errorf("prepare dynamic resources: %w", err)
	}
	return nil
}

func (m *Manager) prepare(ctx context.Context, pod *v1.Pod) error {
	for _, pc := range podClaims(pod) {
		name, ownedByPod, err := claimName(pod, &pc)
		if err != nil {
			return err
		}
		if name == "" {
			continue // the template's claim is not needed
		}
		if m.claims == nil {
			return fmt.Errorf("fetch ResourceClaim %s: %w", name, ErrNoClaims)
		}
		claim, err := m.claims.ResourceClaim(ctx, pod.Namespace, name)
		if err != nil {
			return fmt.Errorf("fetch ResourceClaim %s: %w", name, err)
		}
		if ownedByPod {
			if err := isForPod(pod, claim); err != nil {
				return err
			}
		}
		if !reservedFor(pod, claim) {
			return fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod.Name, pod.UID, name, claim.UID)
		}
		if claim.Status.Allocation == nil {
			return fmt.Errorf("ResourceClaim %s: %w", claim.Name, ErrNotAllocated)
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if err := driverRegistered(r.Driver); err != nil {
				return err
			}
		}
	}
	return nil
}

// podClaims are the pod's resource claims, with the claim the scheduler
// made for its DRA-backed extended resources last (upstream's
// DRAExtendedResource, beta and on by default since 1.36).
func podClaims(pod *v1.Pod) []v1.PodResourceClaim {
	ext := pod.Status.ExtendedResourceClaimStatus
	if ext == nil {
		return pod.Spec.ResourceClaims
	}
	out := make([]v1.PodResourceClaim, 0, len(pod.Spec.ResourceClaims)+1)
	out = append(out, pod.Spec.ResourceClaims...)
	return append(out, v1.PodResourceClaim{ResourceClaimName: &ext.ResourceClaimName})
}

// claimName is the name of the ResourceClaim pc stands for, and whether
// the claim must be owned by the pod (one made from a template); "" when a
// template needs no claim.
func claimName(pod *v1.Pod, pc *v1.PodResourceClaim) (string, bool, error) {
	switch {
	case pc.ResourceClaimName != nil:
		return *pc.ResourceClaimName, false, nil
	case pc.ResourceClaimTemplateName != nil:
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == pc.Name {
				if st.ResourceClaimName == nil {
					return "", false, nil
				}
				return *st.ResourceClaimName, true, nil
			}
		}
		return "", false, fmt.Errorf("pod %q: %w", pod.Namespace+"/"+pod.Name, ErrClaimNotCreated)
	}
	return "", false, fmt.Errorf("pod %q, spec.resourceClaim %q: %w", pod.Namespace+"/"+pod.Name, pc.Name, ErrUnsupportedClaim)
}

// isForPod checks that a claim made from a template is the pod's own.
func isForPod(pod *v1.Pod, claim *resourcev1.ResourceClaim) error {
	if claim.Namespace != pod.Namespace {
		return fmt.Errorf("ResourceClaim %s/%s is not in the same namespace as Pod %s/%s", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	if !metav1.IsControlledBy(claim, pod) {
		return fmt.Errorf("ResourceClaim %s/%s was not created for Pod %s/%s (Pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	return nil
}

// reservedFor reports whether the claim is reserved for the pod.
func reservedFor(pod *v1.Pod, claim *resourcev1.ResourceClaim) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.UID == pod.UID {
			return true
		}
	}
	return false
}

// driverRegistered says whether the node can use a DRA driver. No driver
// registers with the node yet, so none can.
func driverRegistered(name string) error {
	if name == "" {
		return errors.New("DRA driver name is empty")
	}
	return fmt.Errorf("DRA driver %s is %w", name, ErrDriverNotRegistered)
}
