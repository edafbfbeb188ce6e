package agent

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

// waitFresh is the pod workers' StatusWaiter: it returns once the cache
// holds a status of the pod taken after t, the end of the pod's previous
// work. When the cache has none, it reads the pod's status from the runtime
// at once (pleg InspectPod) instead of waiting up to a relist period for the
// PLEG: a pod acts on a failed liveness probe, on its deletion and on the
// end of its termination within one runtime round trip, as upstream does
// after a sync that acted (PLEGOnDemandRelist). The PLEG still reports every
// change as events at its next relist.
//
// The inspection begins after the previous work ended, so what it reads is
// fresh even when the clock still reads t (a fake clock between two
// steps); the cache stores it stamped with that time. Only when it fails
// does the wait fall back to the PLEG, which brings the error, or a status,
// newer than t.
//
// A relist that finished after t makes every pod's entry fresh (the cache's
// global timestamp). A worker woken by the events of a later relist still
// syncs on that relist's status, not on the older one the timestamp
// vouches for: the PLEG writes a pod's status to the cache before it hands
// over the pod's events.
func (s *podSyncer) waitFresh(ctx context.Context, uid types.UID, t time.Time) error {
	if s.cacheNewerThan(uid, t) {
		return nil
	}
	name, namespace := s.podRef(uid)
	if _, err := s.pleg.InspectPod(ctx, uid, name, namespace); err == nil {
		return nil
	}
	_, err := s.cache.GetNewerThan(ctx, uid, t)
	return err
}

// cacheNewerThan reports whether the cache holds a status of the pod taken
// after t, without waiting.
func (s *podSyncer) cacheNewerThan(uid types.UID, t time.Time) bool {
	if s.cache.Time().After(t) {
		return true
	}
	st, err := s.cache.Get(uid)
	return err == nil && st != nil && st.Timestamp.After(t)
}

// podRef returns the name and namespace of a pod, from the desired pods or
// else from its last status; the runtime finds the pod by its UID alone, so
// these only name it in the status.
func (s *podSyncer) podRef(uid types.UID) (name, namespace string) {
	if pod, ok := s.pods.GetPodByUID(uid); ok {
		return pod.Name, pod.Namespace
	}
	if st, err := s.cache.Get(uid); err == nil && st != nil {
		return st.Name, st.Namespace
	}
	return "", ""
}

// refreshAfter reads the pod's status again after a sync that created,
// started or killed something and had no error, and stores it, in the PLEG's
// cache and as the pod's status: a container started shows as running at
// once rather than at the next relist. After a failed step the pod's status
// shows the failure at its next sync, as upstream's does (it relists a pod on
// demand only after a sync without errors). A failure to read is logged and
// left to the PLEG.
func (s *podSyncer) refreshAfter(ctx context.Context, pod *v1.Pod, res podsync.Result) {
	if len(res.Steps) == 0 || res.Err() != nil || ctx.Err() != nil {
		return
	}
	rs, err := s.pleg.InspectPod(ctx, pod.UID, pod.Name, pod.Namespace)
	if err == nil {
		_, err = s.generate(pod, rs, false, nil)
	}
	if err != nil {
		s.log.Warn("Failed to read the pod's status after its sync", "pod", podDesc(pod), "err", err)
	}
}
