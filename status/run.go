package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Run pushes queued statuses with Options.Workers workers, retries failed
// pushes with backoff, and checks every status every ResyncPeriod, until ctx
// ends. Then it cancels the pushes in flight, waits for its goroutines and
// returns nil. Run may be called once.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return errors.New("run status manager: Run was already called")
	}
	m.running = true
	m.mu.Unlock()

	// The ticker exists before any push, so a test that saw a push may
	// step a fake clock.
	ticker := m.clock.NewTicker(m.resyncPeriod)
	defer ticker.Stop()

	// Each push runs in a goroutine that ends with it, at most m.workers
	// at once: no worker waits idle between pushes, which adds up with
	// many agents in one process.
	slots := make(chan struct{}, m.workers)
	var wg sync.WaitGroup
	defer wg.Wait()

	for {
		if ctx.Err() != nil {
			return nil
		}
		// A slot first, so that a status popped is pushed at once.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		m.mu.Lock()
		now := m.clock.Now()
		next := m.promoteDueLocked(now)
		uid, ok := m.popLocked()
		m.mu.Unlock()
		if ok {
			wg.Go(func() {
				defer func() { <-slots }()
				m.pushOne(ctx, uid)
			})
			continue
		}
		<-slots
		var timer <-chan time.Time
		var t clock.Timer
		if !next.IsZero() {
			t = m.clock.NewTimer(next.Sub(now))
			timer = t.C()
		}
		select {
		case <-ctx.Done():
		case <-m.kick:
		case <-timer:
		case <-ticker.C():
			m.resync()
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// promoteDueLocked queues the pods whose backoff ended and returns the end
// of the earliest backoff still running (zero if none).
func (m *Manager) promoteDueLocked(now time.Time) time.Time {
	var next time.Time
	for uid, e := range m.entries {
		if !e.delayed {
			continue
		}
		if !e.retryAt.After(now) {
			e.delayed = false
			m.enqueueLocked(uid, e)
			continue
		}
		if next.IsZero() || e.retryAt.Before(next) {
			next = e.retryAt
		}
	}
	return next
}

// popLocked takes the next queued pod and marks it in flight.
func (m *Manager) popLocked() (types.UID, bool) {
	for len(m.ready) > 0 {
		uid := m.ready[0]
		m.ready[0] = ""
		m.ready = m.ready[1:]
		e, ok := m.entries[uid]
		if !ok || !e.queued {
			continue // removed meanwhile
		}
		e.queued, e.inflight = false, true
		return uid, true
	}
	m.ready = nil
	return "", false
}

// errSkipped marks a push that wrote nothing and must not be retried before
// the next resync: a static pod without a mirror pod yet.
var errSkipped = errors.New("skipped")

// pushOne pushes the pod's newest status and records the outcome.
func (m *Manager) pushOne(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	e, ok := m.entries[uid]
	if !ok {
		m.mu.Unlock()
		return
	}
	pod, st, version, could, finished := e.pod, e.status, e.version, m.couldHaveRunning(uid, e), e.finished
	m.mu.Unlock()

	pctx, cancel := context.WithCancel(ctx)
	timer := m.clock.AfterFunc(m.timeout, cancel)
	deleted, err := m.push(pctx, pod, st, could, finished)
	timer.Stop()
	cancel()

	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok = m.entries[uid]
	if !ok {
		return
	}
	e.inflight = false
	switch {
	case err == nil || errors.Is(err, ErrPodNotFound):
		if err != nil {
			m.log.Debug("pod not found by the sink; nothing to push", "pod", uid)
		}
		e.pushed = max(e.pushed, version)
		if e.failures > 0 {
			m.log.Info("pushed pod status after failures", "pod", uid, "failures", e.failures)
		}
		e.failures = 0
		if deleted && e.version == version {
			delete(m.entries, uid)
			return
		}
	case errors.Is(err, errSkipped):
		// Not queued again: the next resync tries it, whatever
		// version it has by then.
		e.failures = 0
		return
	default:
		if ctx.Err() != nil {
			return // shutting down; the status stays unpushed
		}
		e.failures++
		wait := m.backoff << min(e.failures-1, 30)
		if wait > m.maxBack || wait <= 0 {
			wait = m.maxBack
		}
		e.delayed, e.retryAt = true, m.clock.Now().Add(wait)
		if e.failures == 1 { // once per streak: the retries of an outage are not news
			m.log.Warn("push pod status failed; will retry with back-off", "pod", uid, "retryIn", wait, "err", err)
		} else {
			m.log.Debug("push pod status failed; will retry", "pod", uid, "attempt", e.failures, "retryIn", wait, "err", err)
		}
		select {
		case m.kick <- struct{}{}: // let Run arm its timer
		default:
		}
		return
	}
	if e.version > e.pushed {
		m.enqueueLocked(uid, e)
	}
}

// push writes one status: it reads the pod from the sink, merges, writes
// when the merged status differs from the sink's, and deletes a finished
// pod (TerminatePod was called) whose deletion was requested. It reports
// whether the pod was deleted.
func (m *Manager) push(ctx context.Context, pod *v1.Pod, st v1.PodStatus, couldHaveRunning, finished bool) (bool, error) {
	api, err := m.sink.GetPod(ctx, pod)
	if err != nil && podspec.IsStatic(pod) && errors.Is(err, ErrPodNotFound) {
		// Its mirror pod is not there yet: the status goes to it at a
		// resync once it is.
		m.log.Debug("static pod has no mirror pod yet", "pod", pod.UID)
		return false, errSkipped
	}
	if err != nil {
		return false, fmt.Errorf("push pod status %s: get pod: %w", pod.UID, err)
	}
	if api == nil {
		return false, fmt.Errorf("push pod status %s: get pod: sink returned no pod", pod.UID)
	}
	if podspec.IsStatic(pod) {
		if !podspec.IsMirror(api) {
			m.log.Debug("static pod has no mirror pod yet", "pod", pod.UID)
			return false, errSkipped
		}
	} else if api.UID != pod.UID {
		m.log.Info("pod was deleted and re-created; not pushing the old pod's status", "pod", pod.UID, "new", api.UID)
		return false, fmt.Errorf("push pod status %s: %w: the sink holds pod %s", pod.UID, ErrPodNotFound, api.UID)
	}
	merged := merge(api.Status, st, couldHaveRunning, metav1.NewTime(m.clock.Now()))
	if !equalByNode(&api.Status, &merged) || len(api.Status.Conditions) != len(merged.Conditions) {
		updated, err := m.sink.UpdatePodStatus(ctx, api, merged)
		if err != nil {
			return false, fmt.Errorf("push pod status %s: update: %w", pod.UID, err)
		}
		if updated != nil {
			api = updated
		} else {
			api = api.DeepCopy()
			api.Status = merged
		}
	}
	// As upstream's, only a finished pod is deleted: a pod whose containers
	// are gone but whose worker has not finished it yet waits for
	// TerminatePod, which pushes again.
	if !finished || !canBeDeleted(api, couldHaveRunning) {
		return false, nil
	}
	if err := m.sink.DeletePod(ctx, api); err != nil && !errors.Is(err, ErrPodNotFound) {
		return false, fmt.Errorf("push pod status %s: delete: %w", pod.UID, err)
	}
	return true, nil
}

// canBeDeleted: the pod's deletion was requested, its status is terminal
// and its containers are gone. Mirror pods are deleted by whoever manages
// them, never here.
func canBeDeleted(api *v1.Pod, couldHaveRunning bool) bool {
	return api.DeletionTimestamp != nil && !podspec.IsMirror(api) && podspec.IsTerminal(api.Status.Phase) && !couldHaveRunning
}
