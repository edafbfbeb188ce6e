package syncloop

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Operation is what a PodUpdate asks of the sync loop. The names and the
// meaning of each are upstream kubelet's.
type Operation int

const (
	// OpSet carries the complete list of pods of one source. Sources send it;
	// the merged stream (source.Config) never does: it turns a SET into the
	// ADD, UPDATE, REMOVE and RECONCILE that make the difference.
	OpSet Operation = iota
	// OpAdd introduces pods the loop has not seen.
	OpAdd
	// OpDelete marks pods as gracefully deleted (their deletionTimestamp is
	// set); the loop handles it as an update, which starts termination.
	OpDelete
	// OpRemove says the pods are gone from their source: stop and forget them.
	OpRemove
	// OpUpdate carries pods whose spec or metadata changed.
	OpUpdate
	// OpReconcile carries pods of which only the status changed, so that the
	// loop can reconcile what it reports.
	OpReconcile
)

// String returns the upstream name of the operation ("ADD", "UPDATE", ...).
func (o Operation) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpAdd:
		return "ADD"
	case OpDelete:
		return "DELETE"
	case OpRemove:
		return "REMOVE"
	case OpUpdate:
		return "UPDATE"
	case OpReconcile:
		return "RECONCILE"
	}
	return fmt.Sprintf("Operation(%d)", int(o))
}

// Names of pod sources, as upstream uses them in the
// kubernetes.io/config.source annotation.
const (
	// SourceFile is the static-pod manifest directory.
	SourceFile = "file"
	// SourceHTTP is the manifest URL.
	SourceHTTP = "http"
	// SourceAPI is the API server: podspec.SourceAPI, the source annotation
	// by which podspec.IsStatic tells an API server's pod from a static one.
	SourceAPI = podspec.SourceAPI
	// SourceAll names every source at once, as in "all sources ready".
	SourceAll = "*"
)

// PodUpdate is one message from a pod source to the sync loop: an operation
// on some pods of one source.
type PodUpdate struct {
	// Op is what to do with Pods.
	Op Operation
	// Source is the source the pods came from (SourceFile, SourceHTTP,
	// SourceAPI or a name of the user's).
	Source string
	// Pods are the pods concerned. The loop and its handler must not modify
	// them: they are shared with the source.
	Pods []*v1.Pod
}
