package cri

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodStatus is the runtime's view of one pod: every sandbox and container the
// runtime holds for the pod's UID, running or not, as CRI reports them. It is
// what the pleg cache stores, what a pod sync compares with the pod's spec and
// what the status block turns into a v1.PodStatus.
//
// The messages are CRI's own and are shared: treat a PodStatus and everything
// it points to as read-only once built.
type PodStatus struct {
	// UID is the pod's UID.
	UID types.UID
	// Name and Namespace are the pod's, as the caller gave them or as the
	// newest sandbox records them.
	Name, Namespace string
	// IPs are the pod's IP addresses, primary first, taken from the newest
	// sandbox when it is ready; empty otherwise.
	IPs []string
	// Sandboxes are the pod's sandboxes, newest first.
	Sandboxes []*runtimeapi.PodSandboxStatus
	// Containers are the pod's containers, every attempt of every container,
	// newest first.
	Containers []*runtimeapi.ContainerStatus
	// Timestamp is when the status was taken: the runtime's state at that
	// time or later is what it shows. GetPodStatus and InspectPod leave it
	// zero; the caller that stores the status stamps it (pleg stamps the
	// time it started the relist, or the event's time).
	Timestamp time.Time
}

// Sandbox returns the newest sandbox, or nil when the pod has none.
func (s *PodStatus) Sandbox() *runtimeapi.PodSandboxStatus {
	if s == nil || len(s.Sandboxes) == 0 {
		return nil
	}
	return s.Sandboxes[0]
}

// ContainerByName returns the newest container with the given name (the
// current attempt), or nil when there is none.
func (s *PodStatus) ContainerByName(name string) *runtimeapi.ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if ContainerName(c) == name {
			return c
		}
	}
	return nil
}

// ContainersByName returns every container with the given name, newest first:
// the current attempt and the dead ones the runtime still holds.
func (s *PodStatus) ContainersByName(name string) []*runtimeapi.ContainerStatus {
	if s == nil {
		return nil
	}
	var out []*runtimeapi.ContainerStatus
	for _, c := range s.Containers {
		if ContainerName(c) == name {
			out = append(out, c)
		}
	}
	return out
}

// ContainerByID returns the container with the given ID, or nil.
func (s *PodStatus) ContainerByID(id string) *runtimeapi.ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.GetId() == id {
			return c
		}
	}
	return nil
}

// ContainerName returns the name of the pod-spec container that c is an
// instance of: the ContainerNameLabel a kubelet sets, or else the name in the
// container's metadata.
func ContainerName(c *runtimeapi.ContainerStatus) string {
	if n, ok := c.GetLabels()[ContainerNameLabel]; ok {
		return n
	}
	return c.GetMetadata().GetName()
}

// PodInspector is the part of a runtime that InspectPod reads: the status of
// one sandbox and of one container.
type PodInspector interface {
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// PodStatusReader is the part of a runtime that GetPodStatus reads: listing
// and inspecting sandboxes and containers. RuntimeService satisfies it.
type PodStatusReader interface {
	PodInspector
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// GetPodStatus returns the runtime's view of the pod with the given UID: it
// lists the sandboxes and containers labelled with the UID (PodUIDLabel) and
// inspects each, as InspectPod does. A pod the runtime knows nothing of gets a
// PodStatus with no sandboxes and no containers, not an error.
//
// name and namespace are recorded in the result; when empty they are taken
// from the newest sandbox's metadata. The result's Timestamp is zero: stamp it
// with a time taken before the call.
func GetPodStatus(ctx context.Context, rt PodStatusReader, uid types.UID, name, namespace string) (*PodStatus, error) {
	selector := map[string]string{PodUIDLabel: string(uid)}
	sandboxes, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("get pod status %s: list sandboxes: %w", uid, err)
	}
	containers, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("get pod status %s: list containers: %w", uid, err)
	}
	// A runtime that ignores the filter must not mix pods up.
	sandboxIDs := make([]string, 0, len(sandboxes))
	for _, sb := range sandboxes {
		if sb.GetMetadata().GetUid() == string(uid) || PodUIDFromLabels(sb.GetLabels()) == uid {
			sandboxIDs = append(sandboxIDs, sb.GetId())
		}
	}
	containerIDs := make([]string, 0, len(containers))
	for _, c := range containers {
		if PodUIDFromLabels(c.GetLabels()) == uid {
			containerIDs = append(containerIDs, c.GetId())
		}
	}
	return InspectPod(ctx, rt, uid, name, namespace, sandboxIDs, containerIDs)
}

// InspectPod builds the pod's status from the given sandbox and container IDs
// (typically what a relist just listed for the pod): it asks the runtime for
// the status of each, one call at a time, and sorts them newest first. An
// object removed since it was listed (ErrNotFound) is left out, as the list
// would have left it out a moment later; any other error fails the whole
// inspection, since a partial status would look like a pod that lost a
// container.
//
// name and namespace are recorded in the result; when empty they are taken
// from the newest sandbox's metadata. The result's Timestamp is zero.
func InspectPod(ctx context.Context, rt PodInspector, uid types.UID, name, namespace string, sandboxIDs, containerIDs []string) (*PodStatus, error) {
	st := &PodStatus{
		UID:        uid,
		Name:       name,
		Namespace:  namespace,
		Sandboxes:  make([]*runtimeapi.PodSandboxStatus, 0, len(sandboxIDs)),
		Containers: make([]*runtimeapi.ContainerStatus, 0, len(containerIDs)),
	}
	for _, id := range sandboxIDs {
		resp, err := rt.PodSandboxStatus(ctx, id, false)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspect pod %s: sandbox %s: %w", uid, id, err)
		}
		if resp.GetStatus() == nil {
			return nil, fmt.Errorf("inspect pod %s: sandbox %s: runtime returned no status", uid, id)
		}
		st.Sandboxes = append(st.Sandboxes, resp.GetStatus())
	}
	for _, id := range containerIDs {
		resp, err := rt.ContainerStatus(ctx, id, false)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspect pod %s: container %s: %w", uid, id, err)
		}
		if resp.GetStatus() == nil {
			return nil, fmt.Errorf("inspect pod %s: container %s: runtime returned no status", uid, id)
		}
		st.Containers = append(st.Containers, resp.GetStatus())
	}
	sortSandboxesNewestFirst(st.Sandboxes)
	sortContainersNewestFirst(st.Containers)
	if sb := st.Sandbox(); sb != nil {
		if st.Name == "" && st.Namespace == "" {
			st.Name, st.Namespace = sb.GetMetadata().GetName(), sb.GetMetadata().GetNamespace()
		}
		st.IPs = SandboxIPs(sb)
	}
	return st, nil
}

// SandboxIPs returns a ready sandbox's IP addresses, primary first; none for a
// sandbox that is not ready (its network may be gone) or has no network
// status (host network).
func SandboxIPs(sb *runtimeapi.PodSandboxStatus) []string {
	if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil
	}
	net := sb.GetNetwork()
	if net.GetIp() == "" {
		return nil
	}
	ips := make([]string, 0, 1+len(net.GetAdditionalIps()))
	ips = append(ips, net.GetIp())
	for _, ip := range net.GetAdditionalIps() {
		if ip.GetIp() != "" {
			ips = append(ips, ip.GetIp())
		}
	}
	return ips
}

// PodStatusFromEvent builds the pod's status carried by a container event:
// the event's sandbox and the statuses of the pod's containers that came with
// it, newest first, stamped with the event's creation time. It fails when the
// event carries no sandbox status (the runtime could not find the sandbox; a
// relist will catch up).
func PodStatusFromEvent(ev *runtimeapi.ContainerEventResponse) (*PodStatus, error) {
	sb := ev.GetPodSandboxStatus()
	if sb.GetMetadata() == nil {
		return nil, fmt.Errorf("container event for %s: no sandbox status", ev.GetContainerId())
	}
	containers := slices.Clone(ev.GetContainersStatuses())
	sortContainersNewestFirst(containers)
	return &PodStatus{
		UID:        types.UID(sb.GetMetadata().GetUid()),
		Name:       sb.GetMetadata().GetName(),
		Namespace:  sb.GetMetadata().GetNamespace(),
		IPs:        SandboxIPs(sb),
		Sandboxes:  []*runtimeapi.PodSandboxStatus{sb},
		Containers: containers,
		Timestamp:  time.Unix(0, ev.GetCreatedAt()),
	}, nil
}

// sortSandboxesNewestFirst sorts sandboxes by creation time, newest first; ties
// go to the higher attempt, then to the lower ID, so the order is total.
func sortSandboxesNewestFirst(s []*runtimeapi.PodSandboxStatus) {
	slices.SortFunc(s, func(a, b *runtimeapi.PodSandboxStatus) int {
		if c := cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.GetMetadata().GetAttempt(), a.GetMetadata().GetAttempt()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetId(), b.GetId())
	})
}

// sortContainersNewestFirst sorts containers by creation time, newest first;
// ties go to the higher attempt, then to the lower ID, so the order is total.
func sortContainersNewestFirst(s []*runtimeapi.ContainerStatus) {
	slices.SortFunc(s, func(a, b *runtimeapi.ContainerStatus) int {
		if c := cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.GetMetadata().GetAttempt(), a.GetMetadata().GetAttempt()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetId(), b.GetId())
	})
}
