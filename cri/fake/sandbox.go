package fake

import (
	"context"
	"fmt"
	"maps"
	"net/netip"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

type sandbox struct {
	membership
	id         string
	name       string // the reserved name, as containerd builds it
	config     *runtimeapi.PodSandboxConfig
	handler    string
	state      runtimeapi.PodSandboxState
	createdAt  int64
	ip         netip.Addr // invalid: none
	containers []*container
	listed     *runtimeapi.PodSandbox // the list entry, shared; see listEntry
}

func (s *sandbox) objectID() string { return s.id }

// podNetwork is where non-host-network sandboxes get their IP, as the
// bridge network of containerd's default CNI configuration.
var podNetwork = netip.MustParsePrefix("10.88.0.0/16")

// listEntry returns s as ListPodSandbox lists it, built once and shared
// until the sandbox's state (the only field of the entry that ever changes)
// does; callers treat list results as read-only.
func (s *sandbox) listEntry() *runtimeapi.PodSandbox {
	if s.listed == nil || s.listed.State != s.state {
		s.listed = s.toPodSandbox()
	}
	return s.listed
}

func (s *sandbox) toPodSandbox() *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id:             s.id,
		Metadata:       sandboxMetadata(s.config.GetMetadata()),
		State:          s.state,
		CreatedAt:      s.createdAt,
		Labels:         maps.Clone(s.config.GetLabels()),
		Annotations:    maps.Clone(s.config.GetAnnotations()),
		RuntimeHandler: s.handler,
	}
}

func sandboxMetadata(md *runtimeapi.PodSandboxMetadata) *runtimeapi.PodSandboxMetadata {
	if md == nil {
		return nil
	}
	return &runtimeapi.PodSandboxMetadata{Name: md.Name, Uid: md.Uid, Namespace: md.Namespace, Attempt: md.Attempt}
}

func (s *sandbox) toStatus() *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:             s.id,
		Metadata:       sandboxMetadata(s.config.GetMetadata()),
		State:          s.state,
		CreatedAt:      s.createdAt,
		Network:        &runtimeapi.PodSandboxNetworkStatus{},
		Labels:         maps.Clone(s.config.GetLabels()),
		Annotations:    maps.Clone(s.config.GetAnnotations()),
		RuntimeHandler: s.handler,
	}
	if s.ip.IsValid() {
		st.Network.Ip = s.ip.String()
	}
	nsOpts := proto.CloneOf(s.config.GetLinux().GetSecurityContext().GetNamespaceOptions())
	if nsOpts == nil {
		nsOpts = &runtimeapi.NamespaceOption{}
	}
	st.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: nsOpts}}
	return st
}

func hostNetwork(config *runtimeapi.PodSandboxConfig) bool {
	return config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
}

// RunPodSandbox implements cri.SandboxManager. The sandbox is ready at once;
// unless it uses the node's network it gets the next free IP of
// 10.88.0.0/16, in order from 10.88.0.2 and wrapping around, as the
// host-local IPAM plugin hands them out. A sandbox whose metadata (name,
// namespace, uid, attempt) is that of an existing one is ErrAlreadyExists
// (containerd's "name is reserved"). While NetworkReady is false, only
// host-network sandboxes can run. Events: CREATED then STARTED, with the
// sandbox's ID as container ID, as containerd 1.7.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	if err := r.enter(ctx, RunPodSandbox, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler}); err != nil {
		return "", err
	}
	md := config.GetMetadata()
	if md.GetName() == "" || md.GetNamespace() == "" || md.GetUid() == "" {
		return "", fmt.Errorf("run pod sandbox: metadata needs a name, namespace and uid, got %v: %w", md, cri.ErrInvalidArgument)
	}
	config = proto.CloneOf(config)
	now := r.now()
	r.mu.Lock()
	defer r.unlock()
	name := fmt.Sprintf("%s_%s_%s_%d", md.Name, md.Namespace, md.Uid, md.Attempt)
	if other, ok := r.sandboxNames[name]; ok {
		return "", fmt.Errorf("failed to reserve sandbox name %q: name %q is reserved for %q: %w", name, name, other, cri.ErrAlreadyExists)
	}
	s := &sandbox{
		name:      name,
		config:    config,
		handler:   runtimeHandler,
		state:     runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt: now,
	}
	if !hostNetwork(config) {
		if nr := r.conditions[1]; !nr.Status {
			return "", fmt.Errorf("failed to setup network for sandbox %q: network not ready: %s: %s: %w", name, nr.Reason, nr.Message, cri.ErrFailedPrecondition)
		}
		ip, ok := r.ips.alloc()
		if !ok {
			return "", fmt.Errorf("failed to setup network for sandbox %q: no free IP address in %s", name, podNetwork)
		}
		s.ip = ip
	}
	s.id = r.newIDLocked("sandbox", name)
	r.sandboxes.add(s)
	r.sandboxNames[name] = s.id
	r.emitLocked(now, s.id, s, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	r.emitLocked(now, s.id, s, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	r.log.Debug("sandbox ready", "id", s.id, "pod", md.Namespace+"/"+md.Name, "ip", s.ip)
	return s.id, nil
}

// StopPodSandbox implements cri.SandboxManager: it kills the sandbox's
// running containers at once (exit code 137, as containerd stops them with
// no grace period), releases its IP and marks it not ready. Stopping a
// missing or stopped sandbox is not an error. Events: STOPPED for each
// container killed, then for the sandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	if err := r.enter(ctx, StopPodSandbox, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podSandboxID}); err != nil {
		return err
	}
	now := r.now()
	r.mu.Lock()
	defer r.unlock()
	s, err := r.sandboxes.resolve(podSandboxID, "pod sandbox")
	if err != nil {
		return ignoreNotFound(err)
	}
	r.stopSandboxLocked(now, s)
	return nil
}

// UpdatePodSandboxResources implements cri.SandboxResourcesUpdater: the
// call is recorded (Calls) for the sandbox, which must exist (NotFound
// otherwise, as containerd); nothing else changes, the containers' own
// resources being what UpdateContainerResources set.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) error {
	if err := r.enter(ctx, UpdatePodSandboxResources, proto.CloneOf(req)); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.sandboxes.resolve(req.GetPodSandboxId(), "pod sandbox")
	return err
}

var _ cri.SandboxResourcesUpdater = (*Runtime)(nil)

func (r *Runtime) stopSandboxLocked(now int64, s *sandbox) {
	for _, c := range s.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.exitLocked(now, c, exitKilled, "", "")
		}
	}
	if s.state == runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		return
	}
	s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if s.ip.IsValid() {
		r.ips.release(s.ip)
		s.ip = netip.Addr{}
	}
	r.emitLocked(now, s.id, s, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	r.log.Debug("sandbox stopped", "id", s.id)
}

// RemovePodSandbox implements cri.SandboxManager: it stops the sandbox if
// it is ready (as containerd 1.7 does; 1.6 refused), then removes its
// containers and itself. Removing a missing sandbox is not an error.
// Events: those of the stop, DELETED for each container, then for the
// sandbox (which carries its last status).
func (r *Runtime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	if err := r.enter(ctx, RemovePodSandbox, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podSandboxID}); err != nil {
		return err
	}
	now := r.now()
	r.mu.Lock()
	defer r.unlock()
	s, err := r.sandboxes.resolve(podSandboxID, "pod sandbox")
	if err != nil {
		return ignoreNotFound(err)
	}
	r.stopSandboxLocked(now, s)
	for len(s.containers) > 0 {
		r.removeContainerLocked(now, s.containers[0])
	}
	r.emitLocked(now, s.id, s, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	r.sandboxes.remove(s)
	delete(r.sandboxNames, s.name)
	delete(r.podStats, s.id)
	r.log.Debug("sandbox removed", "id", s.id)
	return nil
}

// PodSandboxStatus implements cri.SandboxManager. The response also carries
// the statuses of the sandbox's containers and a timestamp, as the evented
// PLEG expects. A missing sandbox is ErrNotFound. verbose adds an "info"
// entry holding the sandbox's config as JSON.
func (r *Runtime) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.enter(ctx, PodSandboxStatus, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podSandboxID, Verbose: verbose}); err != nil {
		return nil, err
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.sandboxes.resolve(podSandboxID, "pod sandbox")
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: s.toStatus(), Timestamp: now}
	for _, c := range s.containers {
		resp.ContainersStatuses = append(resp.ContainersStatuses, r.containerStatusLocked(c))
	}
	if verbose {
		resp.Info = map[string]string{"info": info(s.config)}
	}
	return resp, nil
}

// info renders a config for the verbose Info maps.
func info(m proto.Message) string {
	b, err := protojson.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// ListPodSandbox implements cri.SandboxManager. The filter works as
// containerd's: an ID (exact, or a prefix only one sandbox has), a state,
// labels that must all be present with equal values. Sandboxes are listed in
// creation order (containerd's order is unspecified).
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if err := r.enter(ctx, ListPodSandbox, &runtimeapi.ListPodSandboxRequest{Filter: filter}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	keep := func(s *sandbox) bool {
		return (filter.GetState() == nil || filter.GetState().GetState() == s.state) &&
			(len(filter.GetLabelSelector()) == 0 || matchLabels(s.config.GetLabels(), filter.GetLabelSelector()))
	}
	if id := filter.GetId(); id != "" {
		s, err := r.sandboxes.resolve(id, "pod sandbox")
		if err != nil || !keep(s) {
			return []*runtimeapi.PodSandbox{}, nil
		}
		return []*runtimeapi.PodSandbox{s.listEntry()}, nil
	}
	out := make([]*runtimeapi.PodSandbox, 0, r.sandboxes.len())
	r.sandboxes.each(func(s *sandbox) {
		if keep(s) {
			out = append(out, s.listEntry())
		}
	})
	return out, nil
}

// ipPool hands out the IPv4 addresses of a prefix in order, wrapping around
// and skipping those in use, as the host-local IPAM plugin does. The network
// address, the gateway (the first address) and the broadcast address are
// never handed out.
type ipPool struct {
	first, last, next uint32
	used              map[uint32]bool
}

func newIPPool(p netip.Prefix) ipPool {
	b := p.Masked().Addr().As4()
	base := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	broadcast := base + 1<<(32-p.Bits()) - 1
	return ipPool{first: base + 2, last: broadcast - 1, next: base + 2, used: map[uint32]bool{}}
}

func (p *ipPool) alloc() (netip.Addr, bool) {
	if len(p.used) > int(p.last-p.first) {
		return netip.Addr{}, false
	}
	for {
		if p.next < p.first || p.next > p.last {
			p.next = p.first
		}
		a := p.next
		p.next++
		if !p.used[a] {
			p.used[a] = true
			return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), true
		}
	}
}

func (p *ipPool) release(a netip.Addr) {
	b := a.As4()
	delete(p.used, uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3]))
}
