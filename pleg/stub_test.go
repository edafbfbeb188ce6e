package pleg

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// stubRuntime is a minimal, scriptable Runtime for the package's white-box
// tests and golden transcripts: sandboxes and containers set directly by the
// test, errors and hangs per object ID. The scenario tests use cri/fake.
type stubRuntime struct {
	mu         sync.Mutex
	sandboxes  map[string]*runtimeapi.PodSandboxStatus
	containers map[string]*runtimeapi.ContainerStatus
	sandboxOf  map[string]string // container ID -> sandbox ID
	listErr    error
	statusErr  map[string]error // object ID -> error of its status call
	hang       map[string]bool  // object ID ("list" for the list calls) -> block until ctx ends
	calls      atomic.Int64     // status calls
	hung       atomic.Int64     // calls currently hanging
	events     chan stubEvent   // what GetContainerEvents yields
	created    int64
}

type stubEvent struct {
	ev  *runtimeapi.ContainerEventResponse
	err error
}

var _ EventedRuntime = (*stubRuntime)(nil)

func newStub() *stubRuntime {
	return &stubRuntime{
		sandboxes:  map[string]*runtimeapi.PodSandboxStatus{},
		containers: map[string]*runtimeapi.ContainerStatus{},
		sandboxOf:  map[string]string{},
		statusErr:  map[string]error{},
		hang:       map[string]bool{},
		events:     make(chan stubEvent),
	}
}

func (s *stubRuntime) nextCreated() int64 {
	s.created++
	return s.created
}

// reset empties the runtime.
func (s *stubRuntime) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.sandboxes)
	clear(s.containers)
	clear(s.sandboxOf)
}

func (s *stubRuntime) addSandbox(uid types.UID, id string, st runtimeapi.PodSandboxState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sandboxes[id] = &runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Uid: string(uid), Name: "name-" + string(uid), Namespace: "ns"},
		State:     st,
		CreatedAt: s.nextCreated(),
		Labels:    cri.PodLabels(uid, "name-"+string(uid), "ns"),
		Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"},
	}
}

func (s *stubRuntime) addContainer(uid types.UID, sandboxID, id, name string, st runtimeapi.ContainerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.containers[id] = &runtimeapi.ContainerStatus{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: name},
		State:     st,
		CreatedAt: s.nextCreated(),
		Labels:    cri.ContainerLabels(uid, "name-"+string(uid), "ns", name),
	}
	s.sandboxOf[id] = sandboxID
}

func (s *stubRuntime) setContainerState(id string, st runtimeapi.ContainerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.containers[id]
	n := &runtimeapi.ContainerStatus{Id: c.Id, Metadata: c.Metadata, State: st, CreatedAt: c.CreatedAt, Labels: c.Labels}
	if st == runtimeapi.ContainerState_CONTAINER_EXITED {
		n.ExitCode = 1
	}
	s.containers[id] = n
}

func (s *stubRuntime) setSandboxState(id string, st runtimeapi.PodSandboxState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[id]
	s.sandboxes[id] = &runtimeapi.PodSandboxStatus{Id: sb.Id, Metadata: sb.Metadata, State: st, CreatedAt: sb.CreatedAt, Labels: sb.Labels, Network: sb.Network}
}

func (s *stubRuntime) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sandboxes, id)
	delete(s.containers, id)
	delete(s.sandboxOf, id)
}

func (s *stubRuntime) setStatusErr(id string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.statusErr, id)
	} else {
		s.statusErr[id] = err
	}
}

func (s *stubRuntime) setHang(id string, hang bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang[id] = hang
}

func (s *stubRuntime) setListErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listErr = err
}

// block parks until ctx ends when id is set to hang.
func (s *stubRuntime) block(ctx context.Context, id string) error {
	s.mu.Lock()
	h := s.hang[id]
	s.mu.Unlock()
	if !h {
		return nil
	}
	s.hung.Add(1)
	defer s.hung.Add(-1)
	<-ctx.Done()
	return fmt.Errorf("stub: %w", ctx.Err())
}

func (s *stubRuntime) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := s.block(ctx, "list"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, s.listErr
	}
	var out []*runtimeapi.PodSandbox
	for _, id := range slices.Sorted(maps.Keys(s.sandboxes)) {
		sb := s.sandboxes[id]
		if uid := f.GetLabelSelector()[cri.PodUIDLabel]; uid != "" && uid != sb.Metadata.Uid {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: sb.Id, Metadata: sb.Metadata, State: sb.State, CreatedAt: sb.CreatedAt, Labels: sb.Labels})
	}
	return out, nil
}

func (s *stubRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if err := s.block(ctx, "list"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, s.listErr
	}
	var out []*runtimeapi.Container
	for _, id := range slices.Sorted(maps.Keys(s.containers)) {
		c := s.containers[id]
		if uid := f.GetLabelSelector()[cri.PodUIDLabel]; uid != "" && uid != c.Labels[cri.PodUIDLabel] {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: c.Id, PodSandboxId: s.sandboxOf[id], Metadata: c.Metadata, State: c.State, CreatedAt: c.CreatedAt, Labels: c.Labels})
	}
	return out, nil
}

func (s *stubRuntime) PodSandboxStatus(ctx context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	s.calls.Add(1)
	if err := s.block(ctx, id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.statusErr[id]; err != nil {
		return nil, err
	}
	sb, ok := s.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %s: %w", id, cri.ErrNotFound)
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: sb}, nil
}

func (s *stubRuntime) ContainerStatus(ctx context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	s.calls.Add(1)
	if err := s.block(ctx, id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.statusErr[id]; err != nil {
		return nil, err
	}
	c, ok := s.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, cri.ErrNotFound)
	}
	return &runtimeapi.ContainerStatusResponse{Status: c}, nil
}

// GetContainerEvents yields what the test sends on s.events until ctx ends;
// a stubEvent with an error ends the stream.
func (s *stubRuntime) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-s.events:
				if !yield(e.ev, e.err) || e.err != nil {
					return
				}
			}
		}
	}
}

// event builds the event the runtime would send for container id of pod
// uid, carrying the pod's current statuses, stamped at ns.
func (s *stubRuntime) event(id string, typ runtimeapi.ContainerEventType, ns int64) *runtimeapi.ContainerEventResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	sbID := id
	if c, ok := s.sandboxOf[id]; ok {
		sbID = c
	}
	sb := s.sandboxes[sbID]
	ev := &runtimeapi.ContainerEventResponse{ContainerId: id, ContainerEventType: typ, CreatedAt: ns, PodSandboxStatus: sb}
	for cid, c := range s.containers {
		if s.sandboxOf[cid] == sbID {
			ev.ContainersStatuses = append(ev.ContainersStatuses, c)
		}
	}
	return ev
}
