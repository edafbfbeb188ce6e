package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/status/node"
)

// MirrorPodsOptions configure MirrorPods. Every field is optional.
type MirrorPodsOptions struct {
	// Logger receives the logs; nil discards them.
	Logger *slog.Logger
	// SyncTimeout bounds each SyncMirrorPods call; 0 means
	// DefaultMirrorSyncTimeout.
	SyncTimeout time.Duration
}

// DefaultMirrorSyncTimeout bounds a SyncMirrorPods call unless
// MirrorPodsOptions.SyncTimeout says otherwise, so that a slow API server
// holds up the agent's housekeeping for at most that long.
const DefaultMirrorSyncTimeout = 30 * time.Second

// MirrorPods creates and deletes the mirror pods of the node's static pods:
// the API server's read-only copies, as upstream's mirror client. Safe for
// concurrent use.
type MirrorPods struct {
	client   kubernetes.Interface
	nodeName string
	log      *slog.Logger
	timeout  time.Duration
}

var _ agent.MirrorPods = (*MirrorPods)(nil)

// NewMirrorPods returns the mirror-pod client of nodeName.
func NewMirrorPods(client kubernetes.Interface, nodeName string, opts MirrorPodsOptions) (*MirrorPods, error) {
	if client == nil {
		return nil, fmt.Errorf("new mirror pods: client is nil: %w", ErrInvalidArgument)
	}
	if nodeName == "" {
		return nil, fmt.Errorf("new mirror pods: node name is empty: %w", ErrInvalidArgument)
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultMirrorSyncTimeout
	}
	return &MirrorPods{client: client, nodeName: nodeName, log: orDiscard(opts.Logger).With("node", nodeName), timeout: opts.SyncTimeout}, nil
}

// MirrorPodFor returns the mirror pod of a static pod, as upstream builds
// it: a copy with the same namespace, name, labels and spec, the static
// pod's annotations plus kubernetes.io/config.mirror=<its hash>, and the
// Node as its controlling owner (so the garbage collector removes it with
// the Node). The UID, resource version and status are left for the API
// server to set. nodeUID may be empty when the Node is unknown.
func MirrorPodFor(static *v1.Pod, nodeName string, nodeUID types.UID) *v1.Pod {
	m := static.DeepCopy()
	m.UID = ""
	m.ResourceVersion = ""
	m.Status = v1.PodStatus{}
	m.Annotations = maps.Clone(static.Annotations)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[podspec.ConfigMirrorAnnotation] = StaticPodHash(static)
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1",
		Kind:       "Node",
		Name:       nodeName,
		UID:        nodeUID,
		Controller: &controller,
	}}
	return m
}

// CreateMirrorPod creates the mirror pod of static. The Node is read for its
// UID (the owner reference); if it cannot be read the mirror pod is not
// created, as upstream, and a Node not registered yet is an error wrapping
// node.ErrNodeNotFound. A mirror pod of the same hash already there is
// success; one of another hash is an AlreadyExists error (Sync deletes it
// first).
func (m *MirrorPods) CreateMirrorPod(ctx context.Context, static *v1.Pod) error {
	name := static.Namespace + "/" + static.Name
	n, err := m.client.CoreV1().Nodes().Get(ctx, m.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("create mirror pod %s: get node %s: %w", name, m.nodeName, errors.Join(node.ErrNodeNotFound, err))
	}
	if err != nil {
		return fmt.Errorf("create mirror pod %s: get node %s: %w", name, m.nodeName, err)
	}
	mirror := MirrorPodFor(static, m.nodeName, n.UID)
	_, err = m.client.CoreV1().Pods(static.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := m.client.CoreV1().Pods(static.Namespace).Get(ctx, static.Name, metav1.GetOptions{})
		if gerr == nil && IsMirrorPodOf(existing, static) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("create mirror pod %s: %w", name, err)
	}
	m.log.Info("created mirror pod", "pod", name, "hash", mirror.Annotations[podspec.ConfigMirrorAnnotation])
	return nil
}

// DeleteMirrorPod deletes the mirror pod named podFullName (upstream's
// "name_namespace") with grace period 0; with uid set, only the pod of that
// UID. A pod already gone is not an error: it reports false.
func (m *MirrorPods) DeleteMirrorPod(ctx context.Context, podFullName string, uid *types.UID) (bool, error) {
	name, namespace, ok := ParsePodFullName(podFullName)
	if !ok {
		return false, fmt.Errorf("delete mirror pod %q: not a pod full name (name_namespace): %w", podFullName, ErrInvalidArgument)
	}
	grace := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &grace}
	if uid != nil {
		opts.Preconditions = metav1.NewUIDPreconditions(string(*uid))
	}
	err := m.client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete mirror pod %s/%s: %w", namespace, name, err)
	}
	m.log.Info("deleted mirror pod", "pod", namespace+"/"+name)
	return true, nil
}

// PodFullName is upstream's full name of a pod, "name_namespace".
func PodFullName(pod *v1.Pod) string { return pod.Name + "_" + pod.Namespace }

// ParsePodFullName splits "name_namespace" (neither part may be empty; a
// namespace holds no "_", so the last one separates them).
func ParsePodFullName(fullName string) (name, namespace string, ok bool) {
	i := strings.LastIndexByte(fullName, '_')
	if i <= 0 || i == len(fullName)-1 {
		return "", "", false
	}
	return fullName[:i], fullName[i+1:], true
}

// MirrorPlan is what Sync does: the mirror pods to delete, then the static
// pods whose mirror pod to create.
type MirrorPlan struct {
	// Delete are mirror pods that are orphaned (no static pod of that
	// name), outdated (another hash) or being deleted.
	Delete []*v1.Pod
	// Create are static pods without a current mirror pod.
	Create []*v1.Pod
}

// PlanMirrorPods compares the node's static pods with the mirror pods the
// API server holds for it, as upstream's sync does pod by pod: a static pod
// with no mirror pod gets one; a mirror pod of another hash, or one being
// deleted, is deleted and created again; a mirror pod whose static pod is
// gone is deleted. A static pod being deleted gets no new mirror pod. Pods
// that are not mirror pods are ignored. The result is sorted by full name,
// so the same input always gives the same plan.
func PlanMirrorPods(staticPods, mirrorPods []*v1.Pod) MirrorPlan {
	mirrors := map[string]*v1.Pod{}
	for _, m := range mirrorPods {
		if m == nil {
			continue
		}
		if _, ok := m.Annotations[podspec.ConfigMirrorAnnotation]; ok {
			mirrors[PodFullName(m)] = m
		}
	}
	var plan MirrorPlan
	wanted := map[string]bool{}
	for _, s := range staticPods {
		if s == nil {
			continue
		}
		full := PodFullName(s)
		wanted[full] = true
		m, ok := mirrors[full]
		if ok && (m.DeletionTimestamp != nil || !IsMirrorPodOf(m, s)) {
			plan.Delete = append(plan.Delete, m)
			ok = false
		}
		if !ok && s.DeletionTimestamp == nil {
			plan.Create = append(plan.Create, s)
		}
	}
	for full, m := range mirrors {
		if !wanted[full] && m.DeletionTimestamp == nil {
			plan.Delete = append(plan.Delete, m)
		}
	}
	byName := func(a, b *v1.Pod) int { return strings.Compare(PodFullName(a), PodFullName(b)) }
	slices.SortFunc(plan.Delete, byName)
	slices.SortFunc(plan.Create, byName)
	return plan
}

// Sync carries out PlanMirrorPods(staticPods, mirrorPods): it deletes first
// (each with its UID as precondition), then creates. It goes on after a
// failure, so one bad pod does not hold up the others, and returns the
// plan with every error joined. While the Node is not registered (the API
// server has just come back, the registration's back-off runs) no mirror
// pod can be created and none is: that is not an error, as upstream, which
// skips the mirror pod until it can read its Node; the next Sync creates
// them.
func (m *MirrorPods) Sync(ctx context.Context, staticPods, mirrorPods []*v1.Pod) (MirrorPlan, error) {
	plan := PlanMirrorPods(staticPods, mirrorPods)
	var errs []error
	for _, p := range plan.Delete {
		uid := p.UID
		if _, err := m.DeleteMirrorPod(ctx, PodFullName(p), &uid); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range plan.Create {
		err := m.CreateMirrorPod(ctx, p)
		if errors.Is(err, node.ErrNodeNotFound) {
			m.log.Debug("no mirror pods yet: the Node is not registered", "pods", len(plan.Create))
			break
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return plan, errors.Join(errs...)
}

// SyncMirrorPods implements agent.MirrorPods: it is Sync bounded by
// MirrorPodsOptions.SyncTimeout (30s), for the agent's housekeeping, which
// logs the error and tries again at its next pass.
func (m *MirrorPods) SyncMirrorPods(ctx context.Context, staticPods, mirrorPods []*v1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	_, err := m.Sync(ctx, staticPods, mirrorPods)
	return err
}
