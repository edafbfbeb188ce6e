package nodetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/status/node"
)

// Op names a Sink method.
type Op string

// The Sink's operations.
const (
	OpUpdateStatus Op = "UpdateNodeStatus"
	OpGetLease     Op = "GetLease"
	OpCreateLease  Op = "CreateLease"
	OpUpdateLease  Op = "UpdateLease"
)

// Call is one recorded call.
type Call struct {
	Op Op
	// Status is the status pushed by UpdateNodeStatus.
	Status v1.NodeStatus
	// Lease is the lease passed to Create/UpdateLease.
	Lease *coordinationv1.Lease
	Err   error
}

// Sink is an in-memory node.StatusSink and node.LeaseSink. The zero value
// holds no lease.
type Sink struct {
	// Fail, when set, is asked before every call; a non-nil error is
	// returned instead.
	Fail func(op Op) error
	// Hang, when set, makes a call block until its ctx ends when it
	// returns true.
	Hang func(op Op) bool

	mu      sync.Mutex
	status  *v1.NodeStatus
	lease   *coordinationv1.Lease
	rv      int
	calls   []Call
	changed chan struct{}
}

var (
	_ node.StatusSink = (*Sink)(nil)
	_ node.LeaseSink  = (*Sink)(nil)
)

// Calls returns the recorded calls.
func (s *Sink) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallsOf returns the recorded calls of one operation.
func (s *Sink) CallsOf(op Op) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// Lease returns a copy of the stored lease.
func (s *Sink) Lease() *coordinationv1.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease.DeepCopy()
}

// NodeStatus returns a copy of the last status pushed.
func (s *Sink) NodeStatus() (v1.NodeStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status == nil {
		return v1.NodeStatus{}, false
	}
	return *s.status.DeepCopy(), true
}

// Wait blocks until cond holds for the recorded calls or ctx ends; cond runs
// without the Sink's lock.
func (s *Sink) Wait(ctx context.Context, cond func([]Call) bool) error {
	for {
		s.mu.Lock()
		calls := s.calls[:len(s.calls):len(s.calls)]
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		if cond(calls) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for sink calls: %w", ctx.Err())
		}
	}
}

func (s *Sink) begin(ctx context.Context, op Op) error {
	if s.Fail != nil {
		if err := s.Fail(op); err != nil {
			return err
		}
	}
	if s.Hang != nil && s.Hang(op) {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *Sink) recordLocked(c Call) {
	s.calls = append(s.calls, c)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// UpdateNodeStatus implements node.StatusSink.
func (s *Sink) UpdateNodeStatus(ctx context.Context, _ string, st v1.NodeStatus) error {
	err := s.begin(ctx, OpUpdateStatus)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.status = st.DeepCopy()
	}
	s.recordLocked(Call{Op: OpUpdateStatus, Status: *st.DeepCopy(), Err: err})
	return err
}

// GetLease implements node.LeaseSink.
func (s *Sink) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	err := s.begin(ctx, OpGetLease)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out *coordinationv1.Lease
	if err == nil {
		if s.lease == nil || s.lease.Namespace != namespace || s.lease.Name != name {
			err = fmt.Errorf("get lease %s/%s: %w", namespace, name, node.ErrLeaseNotFound)
		} else {
			out = s.lease.DeepCopy()
		}
	}
	s.recordLocked(Call{Op: OpGetLease, Err: err})
	return out, err
}

// CreateLease implements node.LeaseSink.
func (s *Sink) CreateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return s.write(ctx, OpCreateLease, l)
}

// UpdateLease implements node.LeaseSink.
func (s *Sink) UpdateLease(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return s.write(ctx, OpUpdateLease, l)
}

func (s *Sink) write(ctx context.Context, op Op, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	err := s.begin(ctx, op)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out *coordinationv1.Lease
	if err == nil {
		switch {
		case op == OpCreateLease && s.lease != nil:
			err = fmt.Errorf("create lease: already exists")
		case op == OpUpdateLease && s.lease == nil:
			err = fmt.Errorf("update lease: %w", node.ErrLeaseNotFound)
		case op == OpUpdateLease && l.ResourceVersion != s.lease.ResourceVersion:
			err = fmt.Errorf("update lease: conflict: resourceVersion %s, have %s", l.ResourceVersion, s.lease.ResourceVersion)
		default:
			s.rv++
			s.lease = l.DeepCopy()
			s.lease.ResourceVersion = strconv.Itoa(s.rv)
			out = s.lease.DeepCopy()
		}
	}
	s.recordLocked(Call{Op: op, Lease: l.DeepCopy(), Err: err})
	return out, err
}

// Runtime is a node.Runtime and node.ImageLister with settable answers.
type Runtime struct {
	mu        sync.Mutex
	version   *runtimeapi.VersionResponse
	statusErr error
	ready     map[string]bool
	images    []*runtimeapi.Image
}

var (
	_ node.Runtime     = (*Runtime)(nil)
	_ node.ImageLister = (*Runtime)(nil)
)

// NewRuntime returns a healthy runtime with the given name and version.
func NewRuntime(name, version string) *Runtime {
	return &Runtime{
		version: &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: name, RuntimeVersion: version, RuntimeApiVersion: "v1"},
		ready:   map[string]bool{runtimeapi.RuntimeReady: true, runtimeapi.NetworkReady: true},
	}
}

// SetDown makes Status fail with err (nil: answer again).
func (r *Runtime) SetDown(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statusErr = err
}

// SetCondition sets a runtime condition (RuntimeReady, NetworkReady).
func (r *Runtime) SetCondition(t string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready[t] = ok
}

// SetImages sets the image list.
func (r *Runtime) SetImages(images []*runtimeapi.Image) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images = images
}

// Version implements node.Runtime.
func (r *Runtime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version, nil
}

// Status implements node.Runtime.
func (r *Runtime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statusErr != nil {
		return nil, r.statusErr
	}
	st := &runtimeapi.RuntimeStatus{}
	for _, t := range []string{runtimeapi.RuntimeReady, runtimeapi.NetworkReady} {
		c := &runtimeapi.RuntimeCondition{Type: t, Status: r.ready[t]}
		if !c.Status {
			c.Reason, c.Message = "NotReady", t+" is false"
		}
		st.Conditions = append(st.Conditions, c)
	}
	return &runtimeapi.StatusResponse{Status: st}, nil
}

// ListImages implements node.ImageLister.
func (r *Runtime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.images, nil
}

// Machine is a node.Machine with fixed answers.
type Machine struct {
	Cap  v1.ResourceList
	Info v1.NodeSystemInfo
}

var _ node.Machine = Machine{}

// Capacity implements node.Machine.
func (m Machine) Capacity(context.Context) (v1.ResourceList, error) { return m.Cap.DeepCopy(), nil }

// SystemInfo implements node.Machine.
func (m Machine) SystemInfo(context.Context) (v1.NodeSystemInfo, error) { return m.Info, nil }
