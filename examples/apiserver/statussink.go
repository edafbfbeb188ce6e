package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/status"
)

// StatusSinkOptions configure a StatusSink. Every field is optional.
type StatusSinkOptions struct {
	// Logger receives the sink's logs; nil discards them.
	Logger *slog.Logger
	// Clock times the waits between retries; nil means the real clock.
	Clock clock.Clock
	// Retry bounds the retries of each call; the zero value is its
	// defaults (5 attempts, 100ms doubling to 2s).
	Retry Retry
	// LocalState, when set, keeps each status the API server has not
	// acknowledged until it or a later one is, across restarts: see
	// StatusSink.Flush.
	LocalState *localstate.State
}

// StatusSink is status.Sink on the API server: it reads pods, patches
// pods/status with what changed and deletes finished pods, as upstream's
// status manager does. Safe for concurrent use.
//
// With a LocalState, a status whose patch fails for any reason but the
// pod being gone is kept there, and forgotten once a patch of the pod's
// status succeeds; Flush sends what is kept.
type StatusSink struct {
	client kubernetes.Interface
	log    *slog.Logger
	clock  clock.Clock
	retry  Retry
	state  *localstate.State

	locksMu sync.Mutex
	locks   map[types.UID]*uidLock
}

// uidLock serializes the patches of one pod's status between
// UpdatePodStatus and Flush.
type uidLock struct {
	mu    sync.Mutex
	users int
}

func (s *StatusSink) lock(uid types.UID) func() {
	s.locksMu.Lock()
	l := s.locks[uid]
	if l == nil {
		l = &uidLock{}
		s.locks[uid] = l
	}
	l.users++
	s.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.locksMu.Lock()
		if l.users--; l.users == 0 {
			delete(s.locks, uid)
		}
		s.locksMu.Unlock()
	}
}

var _ status.Sink = (*StatusSink)(nil)

// NewStatusSink returns a StatusSink writing through client.
func NewStatusSink(client kubernetes.Interface, opts StatusSinkOptions) (*StatusSink, error) {
	if client == nil {
		return nil, fmt.Errorf("new status sink: client is nil: %w", ErrInvalidArgument)
	}
	return &StatusSink{client: client, log: orDiscard(opts.Logger), clock: orClock(opts.Clock), retry: opts.Retry,
		state: opts.LocalState, locks: map[types.UID]*uidLock{}}, nil
}

// GetPod reads pod's namespace/name from the API server. The pod found must
// be the same pod: for a static pod (podspec.IsStatic) a mirror pod whose
// kubernetes.io/config.mirror annotation holds the static pod's hash; for any
// other pod one with pod's UID. Anything else (absent, re-created under the
// same name, a mirror pod of an older manifest) is an error wrapping
// status.ErrPodNotFound, as upstream skips the status update of a pod that
// was deleted and re-created.
func (s *StatusSink) GetPod(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	var got *v1.Pod
	err := s.retry.do(ctx, s.clock, func(ctx context.Context) error {
		var err error
		got, err = s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err
	})
	name := pod.Namespace + "/" + pod.Name
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get pod %s: %w", name, errors.Join(status.ErrPodNotFound, err))
	}
	if err != nil {
		if kept := s.keptPod(ctx, pod, err); kept != nil {
			return kept, nil
		}
		return nil, fmt.Errorf("get pod %s: %w", name, err)
	}
	if podspec.IsStatic(pod) {
		if !IsMirrorPodOf(got, pod) {
			return nil, fmt.Errorf("get pod %s: no mirror pod for static pod %s: %w", name, pod.UID, status.ErrPodNotFound)
		}
		return got, nil
	}
	if got.UID != pod.UID {
		return nil, fmt.Errorf("get pod %s: holds pod %s, not %s (deleted and re-created): %w", name, got.UID, pod.UID, status.ErrPodNotFound)
	}
	return got, nil
}

// keptPod returns the local state's copy of pod when the API server did
// not answer (err) and one is kept, else nil: the status manager then goes
// on to UpdatePodStatus, whose patch fails too and keeps the status as
// unacknowledged, so that a status the node reached while cut off (a pod
// that finished) survives a restart. A static pod's status is never kept
// (its mirror pod has another UID).
func (s *StatusSink) keptPod(ctx context.Context, pod *v1.Pod, err error) *v1.Pod {
	if s.state == nil || pod.UID == "" || podspec.IsStatic(pod) || answered(ctx, err) {
		return nil
	}
	kept, ok, kerr := s.state.Pod(pod.UID)
	if kerr != nil {
		s.log.Error("the local state holds a pod that cannot be read", "pod", pod.Namespace+"/"+pod.Name, "err", kerr)
	}
	if !ok {
		return nil
	}
	s.log.Debug("the API server does not answer: the status goes on from the pod kept in the local state", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	return kept
}

// UpdatePodStatus patches pod's status subresource with a strategic merge
// patch from pod.Status to st, as upstream's podutil.PatchPodStatus: only
// what changed, conditions and container statuses merged by their keys, and
// the pod's UID in the patch so that the API server refuses it for another
// pod of the same name.
func (s *StatusSink) UpdatePodStatus(ctx context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	if s.state == nil || pod.UID == "" {
		return s.patchStatus(ctx, pod, st)
	}
	defer s.lock(pod.UID)()
	got, err := s.patchStatus(ctx, pod, st)
	s.track(pod, st, got, err)
	return got, err
}

// track keeps st as unacknowledged when its patch failed, and forgets the
// pod's kept status when the patch succeeded or the pod is gone. A
// terminal status the API server acknowledged is written into the kept
// copy of the pod at once (got, the server's answer), before the pod
// source's watch brings it: a restart in between must not find the pod
// kept as running.
func (s *StatusSink) track(pod *v1.Pod, st v1.PodStatus, got *v1.Pod, err error) {
	name := pod.Namespace + "/" + pod.Name
	if err == nil || errors.Is(err, status.ErrPodNotFound) {
		if err == nil && got != nil && podspec.IsTerminal(got.Status.Phase) {
			if _, rerr := s.state.RefreshPod(got); rerr != nil {
				s.log.Error("cannot keep the acknowledged terminal status in the local state", "pod", name, "err", rerr)
			}
		}
		if derr := s.state.DeletePodStatus(pod.UID); derr != nil {
			s.log.Error("cannot forget the acknowledged status in the local state", "pod", name, "err", derr)
		}
		return
	}
	if perr := s.state.PutPodStatus(pod, st); perr != nil {
		s.log.Error("cannot keep the unacknowledged status in the local state", "pod", name, "err", perr)
	}
}

// Flush sends every status the local state keeps as unacknowledged (from
// before a restart, or one the status manager gave up on), each as a
// strategic merge patch from the pod's status on the API server, with the
// pod's UID as the precondition. A pod that is gone or re-created under
// its name (a static pod's status is never kept: its mirror pod has
// another UID) has its status dropped; a status the API server
// acknowledged since, or a later one, is not sent again. It returns how
// many it sent, and the errors of those it could not (they stay kept).
func (s *StatusSink) Flush(ctx context.Context) (int, error) {
	if s.state == nil {
		return 0, nil
	}
	kept, err := s.state.PodStatuses()
	if err != nil {
		s.log.Error("the local state holds statuses that cannot be read", "err", err)
	}
	sent := 0
	var errs []error
	for _, k := range kept {
		ok, err := s.flushOne(ctx, k)
		if ok {
			sent++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if sent > 0 || len(errs) > 0 {
		s.log.Info("sent the statuses the API server had not acknowledged", "sent", sent, "failed", len(errs))
	}
	return sent, errors.Join(errs...)
}

func (s *StatusSink) flushOne(ctx context.Context, k *v1.Pod) (bool, error) {
	defer s.lock(k.UID)()
	still, ok, err := s.state.PodStatus(k.UID)
	if err != nil || !ok {
		return false, err // acknowledged meanwhile
	}
	cur, err := s.GetPod(ctx, still)
	if errors.Is(err, status.ErrPodNotFound) {
		s.log.Info("dropped the unacknowledged status of a pod that is gone", "pod", k.Namespace+"/"+k.Name, "uid", k.UID)
		return false, s.state.DeletePodStatus(k.UID)
	}
	if err != nil {
		return false, err
	}
	got, err := s.patchStatus(ctx, cur, still.Status)
	s.track(still, still.Status, got, err)
	return err == nil, err
}

func (s *StatusSink) patchStatus(ctx context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	patch, err := PodStatusPatch(pod.UID, pod.Status, st)
	if err != nil {
		return nil, fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var got *v1.Pod
	err = s.retry.do(ctx, s.clock, func(ctx context.Context) error {
		var err error
		got, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, errors.Join(status.ErrPodNotFound, err))
	}
	if err != nil {
		return nil, fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.log.Debug("patched pod status", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "patch", string(patch))
	return got, nil
}

// DeletePod deletes pod at once (grace period 0) with a precondition on its
// UID, so that a pod re-created under the same name is never deleted. A pod
// already gone, or replaced by another of the same name (the precondition
// fails with a conflict, which is then not retried), is an error wrapping
// status.ErrPodNotFound.
func (s *StatusSink) DeletePod(ctx context.Context, pod *v1.Pod) error {
	transient := func(err error) bool { return Retryable(err) && !apierrors.IsConflict(err) }
	err := s.retry.doIf(ctx, s.clock, transient, func(ctx context.Context) error {
		return s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteNowOptions(pod.UID))
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, errors.Join(status.ErrPodNotFound, err))
	}
	if err != nil {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.log.Info("deleted pod", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
	return nil
}

// deleteNowOptions are grace period 0 and a UID precondition.
func deleteNowOptions(uid types.UID) metav1.DeleteOptions {
	grace := int64(0)
	return metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: metav1.NewUIDPreconditions(string(uid))}
}

// PodStatusPatch returns the strategic merge patch that turns a pod's
// status from old into next: what changed under "status", and
// metadata.uid=uid, which the API server takes as a precondition (a UID
// cannot change). With nothing changed the patch holds only the UID.
func PodStatusPatch(uid types.UID, old, next v1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(v1.Pod{Status: old})
	if err != nil {
		return nil, fmt.Errorf("encode old status: %w", err)
	}
	newJSON, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: next})
	if err != nil {
		return nil, fmt.Errorf("encode new status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("create status patch: %w", err)
	}
	return patch, nil
}

// IsMirrorPodOf reports whether mirror is the mirror pod of the static pod:
// same namespace and name, and a kubernetes.io/config.mirror annotation
// holding the static pod's hash (StaticPodHash).
func IsMirrorPodOf(mirror, static *v1.Pod) bool {
	if mirror == nil || static == nil || mirror.Namespace != static.Namespace || mirror.Name != static.Name {
		return false
	}
	h, ok := mirror.Annotations[podspec.ConfigMirrorAnnotation]
	return ok && h == StaticPodHash(static)
}

// StaticPodHash is the hash a static pod is known by: its
// kubernetes.io/config.hash annotation, or its UID (which the file and URL
// sources derive from the same hash) when the annotation is absent.
func StaticPodHash(pod *v1.Pod) string {
	if h, ok := pod.Annotations[podspec.ConfigHashAnnotation]; ok && h != "" {
		return h
	}
	return string(pod.UID)
}
