package fake

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
)

// Method names a CRI method, for fault injection and call records.
type Method string

// The CRI methods, named as in the CRI v1 gRPC services.
const (
	Version                  Method = "Version"
	RunPodSandbox            Method = "RunPodSandbox"
	StopPodSandbox           Method = "StopPodSandbox"
	RemovePodSandbox         Method = "RemovePodSandbox"
	PodSandboxStatus         Method = "PodSandboxStatus"
	ListPodSandbox           Method = "ListPodSandbox"
	CreateContainer          Method = "CreateContainer"
	StartContainer           Method = "StartContainer"
	StopContainer            Method = "StopContainer"
	RemoveContainer          Method = "RemoveContainer"
	ListContainers           Method = "ListContainers"
	ContainerStatus          Method = "ContainerStatus"
	UpdateContainerResources Method = "UpdateContainerResources"
	// UpdatePodSandboxResources is cri.SandboxResourcesUpdater's method.
	UpdatePodSandboxResources Method = "UpdatePodSandboxResources"
	ReopenContainerLog        Method = "ReopenContainerLog"
	ExecSync                  Method = "ExecSync"
	Exec                      Method = "Exec"
	Attach                    Method = "Attach"
	PortForward               Method = "PortForward"
	ContainerStats            Method = "ContainerStats"
	ListContainerStats        Method = "ListContainerStats"
	PodSandboxStats           Method = "PodSandboxStats"
	ListPodSandboxStats       Method = "ListPodSandboxStats"
	GetContainerEvents        Method = "GetContainerEvents"
	Status                    Method = "Status"
	UpdateRuntimeConfig       Method = "UpdateRuntimeConfig"
	RuntimeConfig             Method = "RuntimeConfig"
	ListImages                Method = "ListImages"
	ImageStatus               Method = "ImageStatus"
	PullImage                 Method = "PullImage"
	RemoveImage               Method = "RemoveImage"
	ImageFsInfo               Method = "ImageFsInfo"
)

// Call is one recorded call.
type Call struct {
	// Method is the CRI method called.
	Method Method
	// Request is the CRI request message the call corresponds to, built
	// from the arguments: *runtimeapi.RunPodSandboxRequest for
	// RunPodSandbox, *runtimeapi.ExecSyncRequest for ExecSync (its Timeout
	// in whole seconds, rounded up), and so on.
	Request proto.Message
	// Time is when the call was made, on the runtime's clock.
	Time time.Time
}

// Fault is injected into the calls of one method by InjectFault. A faulty
// call first waits Latency on the runtime's clock (or until its ctx ends),
// then, if Hang is set, waits until its ctx ends, then fails with Err if it
// is set; otherwise it goes on as usual. Faulty calls are recorded too.
type Fault struct {
	// Err is returned, wrapped with the method's name, so that errors.Is
	// finds it (use a cri sentinel, e.g. cri.ErrUnavailable, to get its gRPC
	// code through cri.NewServer).
	Err error
	// Latency delays the call on the runtime's clock.
	Latency time.Duration
	// Hang makes the call wait until its ctx ends, then fail with the ctx's
	// error.
	Hang bool
	// Times limits the fault to the next Times calls; 0 means every call
	// until ClearFault.
	Times int
}

type faultState struct {
	Fault
	left int
}

// InjectFault makes the calls of m behave as f says, replacing any fault
// already set for m.
func (r *Runtime) InjectFault(m Method, f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[m] = &faultState{Fault: f, left: f.Times}
}

// ClearFault removes the faults of the given methods; with no method, it
// removes every fault.
func (r *Runtime) ClearFault(methods ...Method) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(methods) == 0 {
		clear(r.faults)
	}
	for _, m := range methods {
		delete(r.faults, m)
	}
}

// Calls returns the calls recorded so far, oldest first. The requests are
// copies.
func (r *Runtime) Calls() []Call {
	return r.callsMatching(func(Call) bool { return true })
}

// CallsOf returns the recorded calls of method m, oldest first. The requests
// are copies.
func (r *Runtime) CallsOf(m Method) []Call {
	return r.callsMatching(func(c Call) bool { return c.Method == m })
}

func (r *Runtime) callsMatching(keep func(Call) bool) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if keep(c) {
			c.Request = proto.Clone(c.Request)
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls forgets the recorded calls.
func (r *Runtime) ResetCalls() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.calls)
	r.calls = r.calls[:0]
}

// enter records a call and applies the method's fault. req is built from
// the caller's arguments; it is cloned before it is kept.
func (r *Runtime) enter(ctx context.Context, m Method, req proto.Message) error {
	f, err := r.record(m, req)
	if err != nil {
		return err
	}
	return r.applyFault(ctx, m, f)
}

// record records a call and takes the method's fault (counting it against
// Fault.Times). It fails once the runtime is closed.
func (r *Runtime) record(m Method, req proto.Message) (Fault, error) {
	now := r.clock.Now()
	if r.callLimit > 0 {
		req = proto.Clone(req)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Fault{}, fmt.Errorf("%s: %w", m, ErrClosed)
	}
	if r.callLimit > 0 {
		if len(r.calls) >= r.callLimit {
			// Forget the older half: bounded memory, amortized O(1).
			n := copy(r.calls, r.calls[len(r.calls)/2:])
			clear(r.calls[n:])
			r.calls = r.calls[:n]
		}
		r.calls = append(r.calls, Call{Method: m, Request: req, Time: now})
	}
	st, ok := r.faults[m]
	if !ok {
		return Fault{}, nil
	}
	if st.Times > 0 {
		if st.left--; st.left <= 0 {
			delete(r.faults, m)
		}
	}
	return st.Fault, nil
}

// applyFault makes the call wait and fail as f says. It is called without
// the lock.
func (r *Runtime) applyFault(ctx context.Context, m Method, f Fault) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	if f.Latency > 0 {
		if err := r.wait(ctx, f.Latency, nil); err != nil {
			return fmt.Errorf("%s: injected latency: %w", m, err)
		}
	}
	if f.Hang {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: injected hang until the caller gave up: %w", m, ctx.Err())
		case <-r.done:
			return fmt.Errorf("%s: %w", m, ErrClosed)
		}
	}
	if f.Err != nil {
		return fmt.Errorf("%s: injected fault: %w", m, f.Err)
	}
	return nil
}
