package apiserver

import (
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubeletkit/kubeletkit/agent"
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

// GatedRecorder is an event recorder that can be handed to an agent before
// the API server's recorder runs: it passes events to the recorder Start
// started and drops them before Start and after its stop. Join and
// examples/vkprovider give one to the agent at construction and start it
// in their Run. The zero value drops every event; it is safe for
// concurrent use.
type GatedRecorder struct {
	rec atomic.Pointer[record.EventRecorder]
}

var _ agent.EventRecorder = (*GatedRecorder)(nil)

// Start starts a recorder of NewRecorder(client, nodeName) and passes
// events to it until stop, which drops events from then on and stops the
// recorder's goroutines.
func (g *GatedRecorder) Start(client kubernetes.Interface, nodeName string) (stop func()) {
	rec, shutdown := NewRecorder(client, nodeName)
	return g.startWith(rec, shutdown)
}

// startWith passes events to rec until stop, which drops events from then
// on and calls shutdown.
func (g *GatedRecorder) startWith(rec record.EventRecorder, shutdown func()) (stop func()) {
	g.rec.Store(&rec)
	return func() {
		g.rec.Store(nil)
		shutdown()
	}
}

// Eventf records an event with the running recorder, or drops it.
func (g *GatedRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if rec := g.rec.Load(); rec != nil {
		(*rec).Eventf(object, eventtype, reason, messageFmt, args...)
	}
}
