package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	goruntime "runtime"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/status/node"
)

// The beta OS and arch labels, which upstream kubelets still set beside the
// GA ones for older selectors.
const (
	LabelOSBeta   = "beta.kubernetes.io/os"
	LabelArchBeta = "beta.kubernetes.io/arch"
)

// NodeSinkOptions configure a NodeSink. Every field is optional.
type NodeSinkOptions struct {
	// Logger receives the sink's logs; nil discards them.
	Logger *slog.Logger
	// Clock times the waits between retries; nil means the real clock.
	Clock clock.Clock
	// Retry bounds the retries of each call; the zero value is its
	// defaults (5 attempts, 100ms doubling to 2s).
	Retry Retry
	// RegisterRetry is the back-off of the Node's registration while the
	// API server does not answer (NotAnswering) or fails in a way worth
	// retrying (Retryable). Its zero fields mean 800ms doubling to 7s, and
	// Attempts 0 no bound: the registration is tried until the call's
	// context ends, as upstream's registerWithAPIServer tries until it
	// succeeds.
	RegisterRetry Retry
	// Hostname is the kubernetes.io/hostname label; "" means the node's
	// name (upstream's hostname override).
	Hostname string
	// OS and Arch are the kubernetes.io/os and kubernetes.io/arch labels;
	// "" means the agent's own (runtime.GOOS, runtime.GOARCH).
	OS, Arch string
	// Labels are added at registration (upstream's --node-labels). They do
	// not override the default labels above and, as upstream, are not
	// reconciled on a Node that already exists.
	Labels map[string]string
	// Taints are set at registration (--register-with-taints).
	Taints []v1.Taint
	// ProviderID is the Node's spec.providerID at registration (upstream's
	// --provider-id); empty means none.
	ProviderID string
	// Unschedulable registers the Node cordoned (--register-schedulable=false).
	Unschedulable bool
	// SkipRegistration leaves the Node to someone else (upstream's
	// --register-node=false): the sink never creates it nor touches its
	// labels, and only patches the status of a Node that exists; while
	// there is none, UpdateNodeStatus is an error wrapping
	// node.ErrNodeNotFound. Labels, Taints, ProviderID and Unschedulable are then
	// unused.
	SkipRegistration bool
}

// NodeSink is node.StatusSink and node.LeaseSink on the API server. The
// first UpdateNodeStatus registers the Node as upstream's
// registerWithAPIServer: it creates it with its labels and the status; if it
// already exists it reconciles the default labels and goes on (unless
// SkipRegistration). While the API server does not answer, the
// registration is tried again with back-off (RegisterRetry) until the
// call's context ends, with one warning per outage; the next call goes on.
// Later calls
// patch nodes/status with a strategic merge patch of what changed. Leases
// live where the controller says (kube-node-lease) and are owned by the
// Node. Safe for concurrent use.
type NodeSink struct {
	client   kubernetes.Interface
	nodeName string
	o        NodeSinkOptions
	log      *slog.Logger
	clock    clock.Clock
	watcher  *NodeWatcher // the Node as last read, for admission

	mu         sync.Mutex
	registered bool
	regFailing bool // the last registration attempt failed: warned already
	nodeUID    types.UID
}

var (
	_ node.StatusSink = (*NodeSink)(nil)
	_ node.LeaseSink  = (*NodeSink)(nil)
)

// NewNodeSink returns the sink of the node nodeName.
func NewNodeSink(client kubernetes.Interface, nodeName string, opts NodeSinkOptions) (*NodeSink, error) {
	if client == nil {
		return nil, fmt.Errorf("new node sink: client is nil: %w", ErrInvalidArgument)
	}
	if nodeName == "" {
		return nil, fmt.Errorf("new node sink: node name is empty: %w", ErrInvalidArgument)
	}
	if opts.Hostname == "" {
		opts.Hostname = nodeName
	}
	if opts.OS == "" {
		opts.OS = goruntime.GOOS
	}
	if opts.Arch == "" {
		opts.Arch = goruntime.GOARCH
	}
	r := &opts.RegisterRetry
	if r.Attempts <= 0 {
		r.Attempts = untilAnswered.Attempts
	}
	if r.Base <= 0 {
		r.Base = untilAnswered.Base
	}
	if r.Max <= 0 {
		r.Max = untilAnswered.Max
	}
	w, err := NewNodeWatcher(client, NodeWatcherOptions{NodeName: nodeName, Logger: opts.Logger, Clock: opts.Clock})
	if err != nil {
		return nil, fmt.Errorf("new node sink: %w", err)
	}
	return &NodeSink{client: client, nodeName: nodeName, o: opts, log: orDiscard(opts.Logger).With("node", nodeName), clock: orClock(opts.Clock),
		watcher: w}, nil
}

// DefaultLabels are the labels the agent owns on its Node: hostname, OS and
// arch, GA and beta.
func (s *NodeSink) DefaultLabels() map[string]string {
	return map[string]string{
		v1.LabelHostname: s.o.Hostname,
		v1.LabelOSStable: s.o.OS, v1.LabelArchStable: s.o.Arch,
		LabelOSBeta: s.o.OS, LabelArchBeta: s.o.Arch,
	}
}

// InitialNode is the Node the sink registers: the extra labels under the
// default ones, the taints, the provider ID, and st as its status.
func (s *NodeSink) InitialNode(st v1.NodeStatus) *v1.Node {
	labels := maps.Clone(s.o.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, s.DefaultLabels())
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.nodeName, Labels: labels},
		Spec:       v1.NodeSpec{Taints: s.o.Taints, Unschedulable: s.o.Unschedulable, ProviderID: s.o.ProviderID},
		Status:     *st.DeepCopy(),
	}
}

// Node returns the Node as the sink last read it from the API server (from
// Watch, when it runs, and at each status update: its labels and taints,
// which the agent's admission matches pods against), or an error before
// the first read. It is an agent.Options.Cluster.Node.
func (s *NodeSink) Node() (*v1.Node, error) { return s.watcher.Node() }

// Registered reports whether the Node has been registered (or found).
func (s *NodeSink) Registered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registered
}

// UpdateNodeStatus registers the Node if it is not yet, then patches its
// status with what differs from st. A Node deleted after registration is an
// error wrapping node.ErrNodeNotFound (as upstream, it is not re-created).
func (s *NodeSink) UpdateNodeStatus(ctx context.Context, nodeName string, st v1.NodeStatus) error {
	if nodeName != s.nodeName {
		return fmt.Errorf("update node status: sink of node %q asked for node %q: %w", s.nodeName, nodeName, ErrInvalidArgument)
	}
	if !s.o.SkipRegistration && !s.Registered() {
		created, err := s.register(ctx, st)
		if err != nil {
			return err
		}
		if created {
			return nil // created with st as its status
		}
	}
	attempt := 0
	return s.o.Retry.do(ctx, s.clock, func(ctx context.Context) error {
		attempt++
		return s.patchStatus(ctx, st, attempt == 1)
	})
}

// register creates the Node, or reconciles the one there; it reports
// whether it created it.
func (s *NodeSink) register(ctx context.Context, st v1.NodeStatus) (bool, error) {
	var created *v1.Node
	retryable := func(err error) bool { return NotAnswering(err) || Retryable(err) }
	err := s.o.RegisterRetry.doIf(ctx, s.clock, retryable, func(ctx context.Context) error {
		var err error
		created, err = s.client.CoreV1().Nodes().Create(ctx, s.InitialNode(st), metav1.CreateOptions{})
		s.noteRegisterAttempt(err)
		return err
	})
	if err == nil {
		s.setRegistered(created.UID)
		s.log.Info("registered node")
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("register node %s: %w", s.nodeName, err)
	}
	err = s.o.Retry.do(ctx, s.clock, func(ctx context.Context) error {
		existing, err := s.client.CoreV1().Nodes().Get(ctx, s.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := existing.DeepCopy()
		if !ReconcileDefaultLabels(want, s.DefaultLabels()) {
			s.setRegistered(existing.UID)
			return nil
		}
		patch, err := twoWayPatch(existing, want, v1.Node{})
		if err != nil {
			return err
		}
		got, err := s.client.CoreV1().Nodes().Patch(ctx, s.nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return err
		}
		s.setRegistered(got.UID)
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("register node %s: reconcile the existing node: %w", s.nodeName, err)
	}
	s.log.Info("node was already registered; reconciled its labels")
	return false, nil
}

// noteRegisterAttempt logs the first failure of the registration while the
// API server does not answer as a warning, the others of the streak at
// debug level.
func (s *NodeSink) noteRegisterAttempt(err error) {
	s.mu.Lock()
	first := !s.regFailing
	s.regFailing = err != nil && NotAnswering(err)
	s.mu.Unlock()
	switch {
	case !s.regFailing:
	case first:
		s.log.Warn("cannot register the node: the API server does not answer; retrying with back-off", "server", serverOf(s.client), "err", err)
	default:
		s.log.Debug("cannot register the node: the API server does not answer", "err", err)
	}
}

func (s *NodeSink) setRegistered(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registered = true
	s.nodeUID = uid
}

// ReconcileDefaultLabels sets on n each default label it lacks or holds with
// another value, as upstream's updateDefaultLabels, and reports whether it
// changed anything. Other labels are left alone.
func ReconcileDefaultLabels(n *v1.Node, defaults map[string]string) bool {
	changed := false
	for k, v := range defaults {
		if cur, ok := n.Labels[k]; ok && cur == v {
			continue
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[k] = v
		changed = true
	}
	return changed
}

// patchStatus reads the Node and patches its status. The first attempt
// reads from the API server's watch cache (resourceVersion "0"), as
// upstream's; a retry reads from storage.
func (s *NodeSink) patchStatus(ctx context.Context, st v1.NodeStatus, fromCache bool) error {
	opts := metav1.GetOptions{}
	if fromCache {
		opts.ResourceVersion = "0"
	}
	cur, err := s.client.CoreV1().Nodes().Get(ctx, s.nodeName, opts)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("update node status %s: %w", s.nodeName, errors.Join(node.ErrNodeNotFound, err))
	}
	if err != nil {
		return fmt.Errorf("update node status %s: get node: %w", s.nodeName, err)
	}
	if !s.Registered() { // SkipRegistration: someone else registered it
		s.setRegistered(cur.UID)
	}
	s.watcher.observe(cur)
	want := cur.DeepCopy()
	want.Status = *st.DeepCopy()
	patch, err := twoWayPatch(cur, want, v1.Node{})
	if err != nil {
		return fmt.Errorf("update node status %s: %w", s.nodeName, err)
	}
	if string(patch) == "{}" {
		return nil
	}
	_, err = s.client.CoreV1().Nodes().Patch(ctx, s.nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("update node status %s: %w", s.nodeName, errors.Join(node.ErrNodeNotFound, err))
	}
	if err != nil {
		return fmt.Errorf("update node status %s: %w", s.nodeName, err)
	}
	return nil
}

// twoWayPatch is the strategic merge patch from old to new.
func twoWayPatch(old, next, dataStruct any) ([]byte, error) {
	o, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	n, err := json.Marshal(next)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	p, err := strategicpatch.CreateTwoWayMergePatch(o, n, dataStruct)
	if err != nil {
		return nil, fmt.Errorf("create patch: %w", err)
	}
	return p, nil
}

// GetLease reads a lease; a missing one is an error wrapping
// node.ErrLeaseNotFound.
func (s *NodeSink) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	l, err := s.client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get lease %s/%s: %w", namespace, name, errors.Join(node.ErrLeaseNotFound, err))
	}
	if err != nil {
		return nil, fmt.Errorf("get lease %s/%s: %w", namespace, name, err)
	}
	return l, nil
}

// CreateLease creates lease, owned by the Node when the Node is known (as
// upstream, so that the lease goes with the Node).
func (s *NodeSink) CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l := s.withOwner(ctx, lease)
	got, err := s.client.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create lease %s/%s: %w", l.Namespace, l.Name, err)
	}
	return got, nil
}

// UpdateLease updates lease (a conflict means another writer: the
// controller reads it again), adding the Node as owner if it has none.
func (s *NodeSink) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l := s.withOwner(ctx, lease)
	got, err := s.client.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("update lease %s/%s: %w", l.Namespace, l.Name, errors.Join(node.ErrLeaseNotFound, err))
	}
	if err != nil {
		return nil, fmt.Errorf("update lease %s/%s: %w", l.Namespace, l.Name, err)
	}
	return got, nil
}

// withOwner returns lease, or a copy with the Node as its owner when it
// has none and the Node can be found.
func (s *NodeSink) withOwner(ctx context.Context, lease *coordinationv1.Lease) *coordinationv1.Lease {
	if len(lease.OwnerReferences) > 0 {
		return lease
	}
	s.mu.Lock()
	uid := s.nodeUID
	s.mu.Unlock()
	if uid == "" {
		n, err := s.client.CoreV1().Nodes().Get(ctx, s.nodeName, metav1.GetOptions{})
		if err != nil {
			s.log.Debug("lease without owner: node not found", "err", err)
			return lease
		}
		uid = n.UID
	}
	l := lease.DeepCopy()
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: s.nodeName, UID: uid}}
	return l
}
