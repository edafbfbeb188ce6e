package status

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The status of a pod that outlived its spec.activeDeadlineSeconds
// (upstream's active deadline handler).
const (
	// ReasonDeadlineExceeded is the pod's reason; it is also the reason of
	// the event a kubelet records for it.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// MessageDeadlineExceeded is the pod's message.
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// PastActiveDeadline reports whether pod has been active on the node for its
// spec.activeDeadlineSeconds or longer at now, counting from startTime (the
// StartTime of the status the node last generated for it). A pod without a
// deadline or without a start time never is.
//
// Generate applies it: such a pod is Failed with ReasonDeadlineExceeded. An
// agent also needs it to sync the pod when its deadline comes, as upstream's
// sync loop asks its handler every second (package agent does, through
// syncloop.Options.PodsToSync).
func PastActiveDeadline(pod *v1.Pod, startTime *metav1.Time, now time.Time) bool {
	if pod == nil || pod.Spec.ActiveDeadlineSeconds == nil || startTime == nil || startTime.IsZero() {
		return false
	}
	allowed := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return now.Sub(startTime.Time) >= allowed
}
