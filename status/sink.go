package status

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Sink is where the Manager writes pod statuses: the API server in a
// kubelet (an implementation with client-go lives in examples), anything
// else in an edge agent or a test. Methods are called concurrently for
// different pods, never for the same pod at once, each with a ctx bounded by
// Options.PushTimeout. Pods and statuses passed in are shared with the
// Manager: a Sink must treat them as read-only.
//
// The Manager writes a status only to a pod GetPod returns: a Sink is an
// API server's view, and a pod it does not hold (deleted, or a static pod
// whose mirror pod is not made yet) gets no status, as upstream. A Sink
// that is only a recipient, knowing no pods beforehand (an edge agent's
// file or queue), answers GetPod with the pod it is given (or, for a
// static pod, that pod marked as its own mirror pod with
// podspec.ConfigMirrorAnnotation), and keeps what UpdatePodStatus returns if it
// wants later pushes merged with it. Package agent does that for the
// Options.Cluster.StatusSink of a node without mirror pods: such a sink
// receives every pod's status even when its GetPod answers ErrPodNotFound.
type Sink interface {
	// GetPod returns the pod as the sink holds it now. For a static pod
	// (IsStaticPod) it returns the pod's mirror pod, found by namespace and
	// name. A pod the sink does not hold is an error wrapping
	// ErrPodNotFound.
	GetPod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error)
	// UpdatePodStatus replaces the status of pod (as returned by GetPod)
	// and returns the pod as stored afterwards (nil if the sink does not
	// return it).
	UpdatePodStatus(ctx context.Context, pod *v1.Pod, status v1.PodStatus) (*v1.Pod, error)
	// DeletePod deletes pod (as returned by GetPod) at once: with the API
	// server, grace period 0 and a precondition on pod.UID, so a pod
	// re-created with the same name is never deleted. A pod already gone
	// is an error wrapping ErrPodNotFound, or nil.
	DeletePod(ctx context.Context, pod *v1.Pod) error
}

// ErrPodNotFound is wrapped by a Sink's errors for a pod it does not hold.
var ErrPodNotFound = errors.New("pod not found")

// PodDeletionSafety says whether a pod may still have running containers:
// until it says no, the Manager neither reports a pod terminal nor asks the
// sink to delete it. podworkers.Workers implements it.
type PodDeletionSafety interface {
	CouldHaveRunningContainers(uid types.UID) bool
}

// PodDeletionSafetyFunc adapts a function to PodDeletionSafety.
type PodDeletionSafetyFunc func(uid types.UID) bool

// CouldHaveRunningContainers calls f.
func (f PodDeletionSafetyFunc) CouldHaveRunningContainers(uid types.UID) bool { return f(uid) }

var _ PodDeletionSafety = PodDeletionSafetyFunc(nil)

// PodGetter gives the pod as the agent last received it from its sources
// (with the API server's status), so the Manager's resync can notice a
// status that was changed behind its back and write it again.
type PodGetter interface {
	GetPodByUID(uid types.UID) (*v1.Pod, bool)
}

// PodGetterFunc adapts a function to PodGetter.
type PodGetterFunc func(uid types.UID) (*v1.Pod, bool)

// GetPodByUID calls f.
func (f PodGetterFunc) GetPodByUID(uid types.UID) (*v1.Pod, bool) { return f(uid) }

var _ PodGetter = PodGetterFunc(nil)
