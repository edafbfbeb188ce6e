package agent

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/podworkers"
	podstartup "github.com/kubeletkit/kubeletkit/status/startup"
)

// podRecords is what the agent remembers of each pod it was given, beside
// what the blocks keep: whether admission refused it, when it was first
// seen and how long it took to run and turn Ready, and how many
// housekeeping passes went by; and, for the pod startup SLI, the moments
// status/startup's tracker weighs (PodStartMetrics, ImagePullMetrics). The
// handler writes it, the syncer and the readers read it; it is safe for
// concurrent use.
type podRecords struct {
	clock   Clock
	metrics Metrics
	starts  *podstartup.Tracker

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
	return &podRecords{clock: clk, metrics: metrics, starts: podstartup.New(), rejected: map[types.UID]struct{}{},
		seen: map[types.UID]struct{}{}, latency: map[types.UID]*startup{}}
}

// add notes a pod given to the node; the first time, its start is timed
// and it takes the next place in admission order.
func (r *podRecords) add(pod *v1.Pod) {
	r.starts.Add(pod)
	uid := pod.UID
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
		r.starts.Forget(uid)
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
// first Ready (readyLatencies), and shows the status to the startup
// tracker, which answers once every container runs
// (kubelet_pod_start_total_duration_seconds and
// kubelet_pod_start_sli_duration_seconds).
func (r *podRecords) observeStartup(pod *v1.Pod, st *v1.PodStatus) {
	uid := pod.UID
	now := r.clock.Now()
	if o, ok := r.starts.Observe(pod, st, now); ok {
		if pm, ok := r.metrics.(PodStartMetrics); ok {
			pm.PodStartTotalDuration(o.Total)
			if o.CountsForSLI {
				pm.PodStartSLIDuration(o.SLI)
			}
		}
	}
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

// pulled is told of an image pull for pod (podsync.Options.Pulls): the
// startup tracker weighs its time, and ImagePullMetrics times a success.
func (r *podRecords) pulled(pod *v1.Pod, p podsync.Pull) {
	r.starts.PullStarted(pod.UID, p.Start)
	if p.Err != nil {
		return
	}
	r.starts.PullFinished(pod.UID, p.End)
	if im, ok := r.metrics.(ImagePullMetrics); ok {
		im.ImagePulled(p.End.Sub(p.Start), p.Size)
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
