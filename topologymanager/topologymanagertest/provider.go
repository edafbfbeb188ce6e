// Package topologymanagertest has a fake topologymanager.HintProvider for
// tests of the topology manager and of what composes it.
//
// Provider returns the hints its funcs give (none when a func is nil),
// allocates by its AllocateFunc (nil: success) and records every call as a
// typed Call, with the affinity its Store held for the container when it
// allocated. It is safe for concurrent use; it allocates nothing real.
package topologymanagertest

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// Method names in a Call.
const (
	ContainerHints = "ContainerHints"
	PodHints       = "PodHints"
	Allocate       = "Allocate"
)

// Call is one call a Provider received.
type Call struct {
	// Provider is the Provider's Name.
	Provider string
	// Method is ContainerHints, PodHints or Allocate.
	Method string
	// Pod is the pod's UID; Container is empty for PodHints.
	Pod       types.UID
	Container string
	// Affinity is what the Store returned in Allocate (zero otherwise, or
	// without a Store).
	Affinity topologymanager.Hint
	// Err is what Allocate returned.
	Err error
}

// String prints the call as "cpu Allocate p1/c1 {0} preferred".
func (c Call) String() string {
	switch c.Method {
	case PodHints:
		return fmt.Sprintf("%s %s %s", c.Provider, c.Method, c.Pod)
	case Allocate:
		s := fmt.Sprintf("%s %s %s/%s %s", c.Provider, c.Method, c.Pod, c.Container, c.Affinity)
		if c.Err != nil {
			s += " error: " + c.Err.Error()
		}
		return s
	}
	return fmt.Sprintf("%s %s %s/%s", c.Provider, c.Method, c.Pod, c.Container)
}

// Provider is a fake HintProvider. Set its fields before use.
type Provider struct {
	// Name identifies the provider in its Calls.
	Name string
	// Store, when set, is read in Allocate to record the affinity.
	Store topologymanager.Store
	// ContainerHintsFunc, PodHintsFunc and AllocateFunc answer the calls;
	// nil answers no hints (no preference) and a successful allocation.
	ContainerHintsFunc func(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint
	PodHintsFunc       func(pod *v1.Pod) map[string][]topologymanager.Hint
	AllocateFunc       func(pod *v1.Pod, c *v1.Container) error
	// OnCall, when set, sees every call as it is recorded (to interleave
	// the calls of several providers in one log).
	OnCall func(Call)

	mu    sync.Mutex
	calls []Call
}

var _ topologymanager.HintProvider = (*Provider)(nil)

func (p *Provider) record(c Call) {
	p.mu.Lock()
	p.calls = append(p.calls, c)
	on := p.OnCall
	p.mu.Unlock()
	if on != nil {
		on(c)
	}
}

// Calls returns a copy of the calls received so far.
func (p *Provider) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Call(nil), p.calls...)
}

// ContainerHints records the call and returns ContainerHintsFunc's hints.
func (p *Provider) ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
	p.record(Call{Provider: p.Name, Method: ContainerHints, Pod: pod.UID, Container: c.Name})
	if p.ContainerHintsFunc == nil {
		return nil
	}
	return p.ContainerHintsFunc(pod, c)
}

// PodHints records the call and returns PodHintsFunc's hints.
func (p *Provider) PodHints(pod *v1.Pod) map[string][]topologymanager.Hint {
	p.record(Call{Provider: p.Name, Method: PodHints, Pod: pod.UID})
	if p.PodHintsFunc == nil {
		return nil
	}
	return p.PodHintsFunc(pod)
}

// Allocate reads the Store, calls AllocateFunc and records the call.
func (p *Provider) Allocate(pod *v1.Pod, c *v1.Container) error {
	call := Call{Provider: p.Name, Method: Allocate, Pod: pod.UID, Container: c.Name}
	if p.Store != nil {
		call.Affinity = p.Store.Affinity(pod.UID, c.Name)
	}
	var err error
	if p.AllocateFunc != nil {
		err = p.AllocateFunc(pod, c)
	}
	call.Err = err
	p.record(call)
	return err
}
