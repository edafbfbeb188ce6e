package apiserver

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventComponent is the component upstream kubelets write events as.
const EventComponent = "kubelet"

// NewRecorder returns an event recorder that writes events through client
// as upstream's kubelet does: an EventBroadcaster recording to the events
// API, with source component "kubelet" and host nodeName, so its Eventf can
// be passed straight to the blocks. The broadcaster aggregates and
// rate-limits repeated events as client-go does. It runs goroutines of its
// own: stop ends them (and drops events not yet written); call it once the
// blocks are stopped.
func NewRecorder(client kubernetes.Interface, nodeName string) (record.EventRecorder, func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: EventComponent, Host: nodeName})
	return rec, b.Shutdown
}
