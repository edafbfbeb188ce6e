package pleg

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// EventType says what happened to a pod.
type EventType uint8

// The event types, upstream's names. A sync loop syncs the pod on every type
// but ContainerRemoved.
const (
	// ContainerStarted: a container (or sandbox) is running that was not.
	ContainerStarted EventType = iota + 1
	// ContainerDied: a container (or sandbox) stopped running: it exited,
	// or vanished without being seen to exit (then ContainerRemoved follows).
	ContainerDied
	// ContainerRemoved: an exited container (or sandbox) is gone from the
	// runtime.
	ContainerRemoved
	// ContainerChanged: a container moved to a state that is neither running
	// nor exited (created, unknown). The relist diff produces it so that the
	// pod is inspected; like upstream, the PLEGs do not deliver it.
	ContainerChanged
	// PodSync: something changed in the pod that no single event above
	// describes. The PLEGs deliver it in place of a pod's pending events when
	// the consumer fell behind (see Events).
	PodSync
)

var eventTypeNames = [...]string{
	ContainerStarted: "ContainerStarted",
	ContainerDied:    "ContainerDied",
	ContainerRemoved: "ContainerRemoved",
	ContainerChanged: "ContainerChanged",
	PodSync:          "PodSync",
}

// String returns upstream's name of the type, e.g. "ContainerDied".
func (t EventType) String() string {
	if int(t) < len(eventTypeNames) && eventTypeNames[t] != "" {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is a pod lifecycle event: something happened to one pod in the
// runtime. It says which pod and, except for PodSync, which container or
// sandbox. The pod's status as of the event is in the Cache by the time the
// event is delivered, on the channel or to OnEvents.
type Event struct {
	// PodUID is the pod the event is about.
	PodUID types.UID
	// Type is what happened.
	Type EventType
	// ContainerID is the container or sandbox the event is about; empty for
	// PodSync.
	ContainerID string
	// Sandbox is true when ContainerID names the pod's sandbox rather than a
	// container (upstream reports both as containers; a consumer that only
	// cares about containers can skip these).
	Sandbox bool
}

// String renders the event as "<pod> <type> <id>", with " (sandbox)" for a
// sandbox; it is the form the golden transcripts use.
func (e Event) String() string {
	switch {
	case e.ContainerID == "":
		return fmt.Sprintf("%s %s", e.PodUID, e.Type)
	case e.Sandbox:
		return fmt.Sprintf("%s %s %s (sandbox)", e.PodUID, e.Type, e.ContainerID)
	}
	return fmt.Sprintf("%s %s %s", e.PodUID, e.Type, e.ContainerID)
}
