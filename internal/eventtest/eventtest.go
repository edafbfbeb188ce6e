package eventtest

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// Event is one recorded event.
type Event struct {
	Object  runtime.Object
	Type    string // "Normal" or "Warning"
	Reason  string
	Message string // the formatted message
}

// String formats the event as "<Type> <Reason> <Message>".
func (e Event) String() string { return e.Type + " " + e.Reason + " " + e.Message }

// Recorder records events; it is safe for concurrent use. The zero value is
// ready.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Eventf records an event.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{Object: object, Type: eventtype, Reason: reason, Message: fmt.Sprintf(messageFmt, args...)})
}

// Events returns a copy of what was recorded, oldest first.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Strings returns the recorded events as strings (Event.String).
func (r *Recorder) Strings() []string {
	var out []string
	for _, e := range r.Events() {
		out = append(out, e.String())
	}
	return out
}

// TakeReasons returns the reasons of the events recorded so far, oldest
// first, and forgets those events.
func (r *Recorder) TakeReasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.Reason)
	}
	r.events = nil
	return out
}

// TakeStrings returns the events recorded so far as strings
// (Event.String), oldest first, and forgets those events.
func (r *Recorder) TakeStrings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.String())
	}
	r.events = nil
	return out
}
