package source

import (
	"io"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime"
)

// EventRecorder receives the events of the merger and the sources. It has
// the method of client-go's record.EventRecorder, which satisfies it.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// EventRecorderFunc adapts a function to EventRecorder.
type EventRecorderFunc func(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})

// Eventf calls f.
func (f EventRecorderFunc) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	f(object, eventtype, reason, messageFmt, args...)
}

var _ EventRecorder = EventRecorderFunc(nil)

// nopRecorder drops events; it stands in for a nil EventRecorder.
type nopRecorder struct{}

func (nopRecorder) Eventf(runtime.Object, string, string, string, ...interface{}) {}

var _ EventRecorder = nopRecorder{}

// ReasonFailedValidation is the reason of the Warning event about a pod a
// source sent but the merger or the source refused (upstream's
// events.FailedValidation).
const ReasonFailedValidation = "FailedValidation"

func orNopRecorder(r EventRecorder) EventRecorder {
	if r == nil {
		return nopRecorder{}
	}
	return r
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return l
}
