package agent

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podworkers"
)

// podRecords is what the agent remembers of each pod it was given, beside
// what the blocks keep: whether admission refused it, when it was first
// seen and how long it took to run and turn Ready, and how many
// housekeeping passes went by. The handler writes it, the syncer and the
// readers read it; it is safe for concurrent use.
type podRecords struct {
	clock   Clock
	metrics Metrics

	mu        sync.Mutex
	cleanups  int                    // housekeeping passes so far
	rejected  map[types.UID]struct{} // pods refused at admission
	seen      map[types.UID]struct{} // pods added and not yet forgotten
	latency   map[types.UID]*startup
	admitted  uint64      // pods added so far, numbering startup.seq
	unsettled []types.UID // pods rejected before the first housekeeping
}

// startup is when the agent first saw a pod, and how long it took to run
// and to turn Ready.
type startup struct {
	added                time.Time
	seq                  uint64        // admission order, for the start gate
	ready                time.Duration // how long after added it turned Ready
	wasRunning, wasReady bool
}

func newPodRecords(clk Clock, metrics Metrics) *podRecords {
	return &podRecords{clock: clk, metrics: metrics, rejected: map[types.UID]struct{}{},
		seen: map[types.UID]struct{}{}, latency: map[types.UID]*startup{}}
}

// add notes a pod given to the node; the first time, its start is timed
// and it takes the next place in admission order.
func (r *podRecords) add(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[uid] = struct{}{}
	if r.latency[uid] == nil {
		r.admitted++
		r.latency[uid] = &startup{added: r.clock.Now(), seq: r.admitted}
	}
}

// reject notes a pod refused at admission; unsettled says the workers
// could not yet tell that it runs nothing (takeUnsettled).
func (r *podRecords) reject(uid types.UID, unsettled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected[uid] = struct{}{}
	if unsettled {
		r.unsettled = append(r.unsettled, uid)
	}
}

// takeUnsettled returns, once, the pods refused while the workers could not
// yet tell that they run nothing.
func (r *podRecords) takeUnsettled() []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.unsettled
	r.unsettled = nil
	return u
}

// isRejected reports whether admission refused the pod.
func (r *podRecords) isRejected(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.rejected[uid]
	return ok
}

// finished returns, and forgets, the pods seen that are neither desired
// (want) nor known to the workers any more.
func (r *podRecords) finished(want map[types.UID]struct{}, known map[types.UID]podworkers.WorkerSync) []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []types.UID
	for uid := range r.seen {
		if _, ok := want[uid]; ok {
			continue
		}
		if _, ok := known[uid]; ok {
			continue
		}
		out = append(out, uid)
		delete(r.seen, uid)
		delete(r.rejected, uid)
		delete(r.latency, uid)
	}
	return out
}

// nextCleanup counts a housekeeping pass and returns how many came before.
func (r *podRecords) nextCleanup() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.cleanups
	r.cleanups++
	return n
}

// observeStartup records, once per pod, how long after the agent first saw
// it the pod was first Running (kubelet_pod_start_duration_seconds) and
// first Ready (readyLatencies).
func (r *podRecords) observeStartup(uid types.UID, st *v1.PodStatus) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := r.latency[uid]
	if lat == nil || lat.added.IsZero() {
		return
	}
	if !lat.wasRunning && st.Phase == v1.PodRunning {
		lat.wasRunning = true
		r.metrics.PodStartDuration(now.Sub(lat.added))
	}
	if !lat.wasReady && podReady(st) {
		lat.ready, lat.wasReady = now.Sub(lat.added), true
	}
}

func podReady(st *v1.PodStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// starting says whether the pod has yet to be seen Running, and its
// admission order: its syncs go through the workers' start gate
// (podworkers.Options.Starting).
func (r *podRecords) starting(uid types.UID) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := r.latency[uid]
	if lat == nil || lat.wasRunning {
		return 0, false
	}
	return lat.seq, true
}

// readyLatencies returns, for each pod that turned Ready, how long after
// the agent first saw the pod (its ADD) that happened.
func (r *podRecords) readyLatencies() map[types.UID]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.UID]time.Duration, len(r.latency))
	for uid, l := range r.latency {
		if l.wasReady {
			out[uid] = l.ready
		}
	}
	return out
}
