package allocation

import (
	"errors"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Upstream's event reasons of an in-place pod resize, recorded on the pod.
const (
	// EventResizeStarted (Normal): the node took a resize up.
	EventResizeStarted = "ResizeStarted"
	// EventResizeCompleted (Normal): the runtime runs the pod with what the
	// node allocated.
	EventResizeCompleted = "ResizeCompleted"
	// EventResizeDeferred (Warning): the resize waits for room on the node.
	EventResizeDeferred = "ResizeDeferred"
	// EventResizeInfeasible (Warning): the node will never take the resize.
	EventResizeInfeasible = "ResizeInfeasible"
	// EventResizeError (Warning): the runtime failed to carry the resize
	// out.
	EventResizeError = "ResizeError"
)

// Upstream's messages of a resize the node cannot take.
const (
	// MessageStaticPod is the PodResizePending message of a static pod's
	// resize, which is Infeasible.
	MessageStaticPod = "In-place resize of static-pods is not supported"
	// MessageCPUManagerStatic is the PodResizePending message of a
	// Guaranteed pod's CPU resize under the static CPU manager, which is
	// Infeasible (upstream without InPlacePodVerticalScalingExclusiveCPUs,
	// alpha and off).
	MessageCPUManagerStatic = `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`
	// MessageMemoryManagerStatic is the PodResizePending message of a
	// Guaranteed pod's memory resize under the memory manager's Static
	// policy, which is Infeasible (upstream without
	// InPlacePodVerticalScalingExclusiveMemory, alpha and off).
	MessageMemoryManagerStatic = `Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"`
	// MessagePodLevelResizeDisabled is the PodResizePending message of a
	// resize of a pod's own resources (spec.resources) on a node whose
	// InPlacePodLevelResourcesVerticalScaling gate is off, which is
	// Infeasible.
	MessagePodLevelResizeDisabled = "InPlacePodLevelResourcesVerticalScaling is disabled"
	// MessageCapacityPrefix starts the PodResizePending message of a
	// resize asking more CPU or memory than the node's allocatable:
	// "Node didn't have enough capacity: cpu, requested: 5000, capacity:
	// 4000" (millicores for cpu, bytes for memory).
	MessageCapacityPrefix = "Node didn't have enough capacity: "
)

// CheckpointFile is the name upstream gives the file that keeps the
// resources the node allocated to each pod's containers
// (allocated_pods_state); the agent keeps it in its root directory.
const CheckpointFile = "allocated_pods_state"

// Sentinels of New's errors.
var (
	// ErrMissingNode: Options.Node is nil.
	ErrMissingNode = errors.New("allocation: missing node allocatable")
	// ErrMissingPods: Options.Pods is nil.
	ErrMissingPods = errors.New("allocation: missing pods")
	// ErrInvalidOptions is wrapped by New's errors for an option it cannot
	// use.
	ErrInvalidOptions = errors.New("allocation: invalid options")
)

// NodeAllocatable gives the node's allocatable resources, which a resize
// is weighed against (upstream's node allocatable, with the devices pods
// hold counted). An error defers the resize, with admission's
// MessageInvalidNodeInfo.
type NodeAllocatable interface {
	Allocatable() (v1.ResourceList, error)
}

// NodeAllocatableFunc adapts a function to NodeAllocatable.
type NodeAllocatableFunc func() (v1.ResourceList, error)

// Allocatable calls f.
func (f NodeAllocatableFunc) Allocatable() (v1.ResourceList, error) { return f() }

// Pods is what a Manager asks of the node's pods. Its methods are called
// without the Manager's lock held, from the goroutine calling the Manager.
type Pods interface {
	// OtherPods returns the pods a resize of pod is weighed against:
	// those admitted to the node that have not finished, pod itself left
	// out. The Manager reads each as allocated, and does not modify the
	// slice.
	OtherPods(pod *v1.Pod) []*v1.Pod
	// PodByUID returns the pod whose deferred resize is retried, while it
	// is worth retrying: the pod is still desired and not being stopped.
	// A pod not found loses its deferred resize.
	PodByUID(uid types.UID) (*v1.Pod, bool)
}

// PodsFuncs adapts two functions to Pods; a nil Others means no other pods,
// a nil ByUID finds no pod.
type PodsFuncs struct {
	Others func(pod *v1.Pod) []*v1.Pod
	ByUID  func(uid types.UID) (*v1.Pod, bool)
}

// OtherPods calls f.Others.
func (f PodsFuncs) OtherPods(pod *v1.Pod) []*v1.Pod {
	if f.Others == nil {
		return nil
	}
	return f.Others(pod)
}

// PodByUID calls f.ByUID.
func (f PodsFuncs) PodByUID(uid types.UID) (*v1.Pod, bool) {
	if f.ByUID == nil {
		return nil, false
	}
	return f.ByUID(uid)
}

// Actuation is the runtime's side of a resize: whether it runs a container
// with the resources the node allocated. The agent answers it from the
// pod's cri.PodStatus with cri/podsync's ResizeDone.
type Actuation interface {
	// Actuated reports whether container c runs with c.Resources (the
	// allocated ones). A container that is not running has nothing left
	// to resize: it reports true.
	Actuated(c *v1.Container) bool
}

// PodActuation is what an Actuation may also answer, found by type
// assertion: whether the pod's own cgroup runs with the pod-level
// resources (spec.resources) the node allocated (upstream's
// InPlacePodLevelResourcesVerticalScaling). An Actuation without it says
// nothing of the pod level: a pod-level resize is then done when its
// containers are.
type PodActuation interface {
	// PodActuated reports whether pod's cgroup has the limits its
	// pod-level resources, as allocated, give it. A pod without a cgroup
	// has nothing left to resize: it reports true.
	PodActuated(pod *v1.Pod) bool
}

// ActuationFuncs adapts two functions to Actuation and PodActuation; a nil
// Container reports every container actuated, a nil Pod every pod.
type ActuationFuncs struct {
	Container func(c *v1.Container) bool
	Pod       func(pod *v1.Pod) bool
}

// Actuated calls f.Container.
func (f ActuationFuncs) Actuated(c *v1.Container) bool { return f.Container == nil || f.Container(c) }

// PodActuated calls f.Pod.
func (f ActuationFuncs) PodActuated(pod *v1.Pod) bool { return f.Pod == nil || f.Pod(pod) }

// ActuationFunc adapts a function to Actuation.
type ActuationFunc func(c *v1.Container) bool

// Actuated calls f.
func (f ActuationFunc) Actuated(c *v1.Container) bool { return f(c) }

// EventRecorder records events on pods; client-go's record.EventRecorder
// fits.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

var (
	_ NodeAllocatable = NodeAllocatableFunc(nil)
	_ Pods            = PodsFuncs{}
	_ Actuation       = ActuationFunc(nil)
	_ Actuation       = ActuationFuncs{}
	_ PodActuation    = ActuationFuncs{}
)

// Options configures New. Zero values are the documented defaults.
type Options struct {
	// CheckpointPath is the file, an absolute path, that keeps the
	// allocations across restarts (the agent's is
	// RootDir/allocated_pods_state, CheckpointFile); Load reads it, and
	// every change of an allocation writes it atomically. "" keeps none.
	CheckpointPath string
	// Node gives the node's allocatable resources. Required.
	Node NodeAllocatable
	// Pods gives the other pods a resize is weighed against, and the pods
	// whose deferred resizes are retried. Required.
	Pods Pods
	// Clock stamps the resize conditions (their probe and transition
	// times). Default the real clock. The Manager sets no timer: the
	// caller decides when deferred resizes are retried.
	Clock clock.PassiveClock
	// Logger receives the Manager's logs. Nil discards them.
	Logger *slog.Logger
	// Recorder receives the Resize* events on pods. Nil means none.
	Recorder EventRecorder
	// CPUManagerStatic says the node's CPU manager runs the static policy:
	// a Guaranteed pod's resize that changes a container's CPU request is
	// Infeasible (MessageCPUManagerStatic), as upstream refuses it.
	CPUManagerStatic bool
	// MemoryManagerStatic says the node's memory manager runs the Static
	// policy: a Guaranteed pod's resize that changes a container's memory
	// request is Infeasible (MessageMemoryManagerStatic).
	MemoryManagerStatic bool
	// PodLevelResizeDisabled is upstream's
	// InPlacePodLevelResourcesVerticalScaling gate turned off: a resize
	// that changes the pod's own resources (spec.resources) is Infeasible
	// (MessagePodLevelResizeDisabled); its containers' resizes are weighed
	// as usual.
	PodLevelResizeDisabled bool
}
