package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's event reasons of an in-place pod resize.
const (
	EventResizeStarted    = "ResizeStarted"
	EventResizeCompleted  = "ResizeCompleted"
	EventResizeDeferred   = "ResizeDeferred"
	EventResizeInfeasible = "ResizeInfeasible"
	EventResizeError      = "ResizeError"
)

// Upstream's messages of a resize the node cannot take.
const (
	msgResizeStaticPod      = "In-place resize of static-pods is not supported"
	msgResizeCapacityPrefix = "Node didn't have enough capacity: "
)

// AllocationCheckpoint is the file under RootDir that keeps the resources
// the node allocated to each pod's containers, upstream's
// allocated_pods_state: a restarted agent runs its pods with what it had
// admitted, and takes a resize the API asked meanwhile up as a resize.
const AllocationCheckpoint = "allocated_pods_state"

// resizeRetryEvery is how many housekeeping passes go between retries of
// the deferred resizes (3 minutes, upstream's period; a pod that leaves
// the node retries them at once).
const resizeRetryEvery = 90

// allocation is the resources the node allocated to a pod, by container
// name: its app containers and sidecars, which are the containers a resize
// may change.
type allocation map[string]v1.ResourceRequirements

type allocationCheckpoint struct {
	Version int                      `json:"version"`
	Pods    map[types.UID]allocation `json:"pods"`
}

// resizeConditions are a pod's PodResizePending and PodResizeInProgress
// conditions (nil: absent).
type resizeConditions struct {
	pending, inProgress *v1.PodCondition
}

// allocations is the node's allocation state, upstream's allocation
// manager: what each admitted pod's containers were given, the resizes
// waiting for room and the resize conditions.
type allocations struct {
	path string // "" keeps no checkpoint

	mu      sync.Mutex
	dirty   bool // pods changed since the checkpoint was written
	pods    map[types.UID]allocation
	conds   map[types.UID]*resizeConditions
	pending []types.UID
}

func newAllocations(path string) (*allocations, error) {
	al := &allocations{path: path, pods: map[types.UID]allocation{}, conds: map[types.UID]*resizeConditions{}}
	if path == "" {
		return al, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return al, nil
	}
	if err != nil {
		return nil, err
	}
	var cp allocationCheckpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("allocation checkpoint %s: %w", path, err)
	}
	if cp.Version != 1 {
		return nil, fmt.Errorf("allocation checkpoint %s: version %d, want 1", path, cp.Version)
	}
	if cp.Pods != nil {
		al.pods = cp.Pods
	}
	return al, nil
}

// resizable calls f with each container a resize may change.
func resizable(pod *v1.Pod, f func(c *v1.Container)) {
	for i := range pod.Spec.InitContainers {
		if podspec.IsSidecar(&pod.Spec.InitContainers[i]) {
			f(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		f(&pod.Spec.Containers[i])
	}
}

// fromAllocation returns pod with its containers' resources as allocated,
// and whether they differ from its spec's (a resize is asked for). The pod
// is copied only when they differ; a pod never allocated is returned as it
// is.
func (al *allocations) fromAllocation(pod *v1.Pod) (*v1.Pod, bool) {
	al.mu.Lock()
	alloc, ok := al.pods[pod.UID]
	al.mu.Unlock()
	if !ok {
		return pod, false
	}
	differs := false
	resizable(pod, func(c *v1.Container) {
		if r, ok := alloc[c.Name]; ok && !equality.Semantic.DeepEqual(r, c.Resources) {
			differs = true
		}
	})
	if !differs {
		return pod, false
	}
	out := pod.DeepCopy()
	resizable(out, func(c *v1.Container) {
		if r, ok := alloc[c.Name]; ok {
			c.Resources = *r.DeepCopy()
		}
	})
	return out, true
}

// set records pod's containers' resources as allocated; flush writes the
// checkpoint, once for a batch of pods (a burst of 500 admissions is one
// write, not 500).
func (al *allocations) set(pod *v1.Pod) {
	alloc := allocation{}
	resizable(pod, func(c *v1.Container) { alloc[c.Name] = *c.Resources.DeepCopy() })
	al.mu.Lock()
	defer al.mu.Unlock()
	if old, ok := al.pods[pod.UID]; ok && equality.Semantic.DeepEqual(old, alloc) {
		return
	}
	al.pods[pod.UID] = alloc
	al.dirty = true
}

// flush writes the checkpoint if set changed anything since the last write.
func (al *allocations) flush() {
	al.mu.Lock()
	defer al.mu.Unlock()
	if al.dirty {
		al.saveLocked()
	}
}

// remove forgets a pod.
func (al *allocations) remove(uid types.UID) {
	al.mu.Lock()
	defer al.mu.Unlock()
	delete(al.conds, uid)
	al.pending = slices.DeleteFunc(al.pending, func(u types.UID) bool { return u == uid })
	if _, ok := al.pods[uid]; ok {
		delete(al.pods, uid)
		al.saveLocked()
	}
}

// retain forgets the pods keep says no to: those neither desired nor
// known to the workers, the checkpoint's pods that never came back after a
// restart among them.
func (al *allocations) retain(keep func(types.UID) bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	n := len(al.pods)
	for uid := range al.pods {
		if !keep(uid) {
			delete(al.pods, uid)
			delete(al.conds, uid)
		}
	}
	if len(al.pods) != n {
		al.saveLocked()
	}
}

func (al *allocations) saveLocked() {
	al.dirty = false
	if al.path == "" {
		return
	}
	// A checkpoint that cannot be written costs only the resizes
	// accepted since the last one, after a restart.
	if err := os.MkdirAll(filepath.Dir(al.path), 0o750); err == nil {
		_ = atomicfile.WriteJSON(al.path, allocationCheckpoint{Version: 1, Pods: al.pods})
	}
}

// conditions returns copies of a pod's resize conditions.
func (al *allocations) conditions(uid types.UID) []v1.PodCondition {
	al.mu.Lock()
	defer al.mu.Unlock()
	rc := al.conds[uid]
	if rc == nil {
		return nil
	}
	var out []v1.PodCondition
	for _, c := range []*v1.PodCondition{rc.pending, rc.inProgress} {
		if c != nil {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}

// setCondition sets one of a pod's resize conditions (nil removes it) and
// reports whether it changed (its reason or message, or its presence). The
// probe time is now; the transition time moves when the reason changes.
func (al *allocations) setCondition(uid types.UID, t v1.PodConditionType, c *v1.PodCondition, now metav1.Time) bool {
	al.mu.Lock()
	defer al.mu.Unlock()
	rc := al.conds[uid]
	if rc == nil {
		if c == nil {
			return false
		}
		rc = &resizeConditions{}
		al.conds[uid] = rc
	}
	slot := &rc.pending
	if t == v1.PodResizeInProgress {
		slot = &rc.inProgress
	}
	old := *slot
	if c == nil {
		*slot = nil
		return old != nil
	}
	c.Type, c.Status = t, v1.ConditionTrue
	c.LastProbeTime, c.LastTransitionTime = now, now
	changed := old == nil || old.Reason != c.Reason || old.Message != c.Message
	if old != nil && old.Reason == c.Reason {
		// As upstream's, the transition time moves with the reason.
		c.LastTransitionTime = old.LastTransitionTime
	}
	*slot = c
	return changed
}

func (al *allocations) hasCondition(uid types.UID, t v1.PodConditionType) bool {
	for _, c := range al.conditions(uid) {
		if c.Type == t {
			return true
		}
	}
	return false
}

// defer queues a pod whose resize waits for room.
func (al *allocations) deferResize(uid types.UID) {
	al.mu.Lock()
	defer al.mu.Unlock()
	if !slices.Contains(al.pending, uid) {
		al.pending = append(al.pending, uid)
	}
}

func (al *allocations) takePending() []types.UID {
	al.mu.Lock()
	defer al.mu.Unlock()
	p := al.pending
	al.pending = nil
	return p
}

// allocatedPod is the pod as the node runs it: its containers' resources
// as allocated, whatever a resize not (yet) accepted asks.
func (a *Agent) allocatedPod(pod *v1.Pod) *v1.Pod {
	p, _ := a.alloc.fromAllocation(pod)
	return p
}

// handleResize decides on a pod's resize, as upstream's allocation
// manager: a static pod's is Infeasible; one asking for more CPU or memory
// than the node's allocatable is Infeasible, with upstream's message; one
// that does not fit beside the other pods is Deferred with the resource
// fit's message, and retried when a pod leaves the node and every 3
// minutes; otherwise it is allocated, the pod gets PodResizeInProgress and
// the event ResizeStarted, and the worker actuates it at its next sync. A
// spec brought back to the allocation drops PodResizePending. It reports
// whether the pod's resize conditions changed.
func (a *Agent) handleResize(pod *v1.Pod) bool {
	now := metav1.NewTime(a.clock.Now())
	if _, asked := a.alloc.fromAllocation(pod); !asked {
		return a.alloc.setCondition(pod.UID, v1.PodResizePending, nil, now)
	}
	ok, reason, msg := a.admitResize(pod)
	if ok {
		a.alloc.set(pod)
		a.alloc.setCondition(pod.UID, v1.PodResizePending, nil, now)
		a.alloc.setCondition(pod.UID, v1.PodResizeInProgress, nil, now)
		a.alloc.setCondition(pod.UID, v1.PodResizeInProgress, &v1.PodCondition{ObservedGeneration: pod.Generation}, now)
		a.events.Eventf(pod, v1.EventTypeNormal, EventResizeStarted, "%s", resizeMessage(pod, "Pod resize started", ""))
		return true
	}
	if reason == v1.PodReasonDeferred {
		a.alloc.deferResize(pod.UID)
	}
	changed := a.alloc.setCondition(pod.UID, v1.PodResizePending,
		&v1.PodCondition{Reason: reason, Message: msg, ObservedGeneration: pod.Generation}, now)
	if changed {
		ev := EventResizeDeferred
		if reason == v1.PodReasonInfeasible {
			ev = EventResizeInfeasible
		}
		a.events.Eventf(pod, v1.EventTypeWarning, ev, "%s", resizeMessage(pod, "Pod resize "+reason, msg))
	}
	return changed
}

// admitResize weighs a resize as upstream: Infeasible for a static pod or
// for requests beyond the node's allocatable (memory named first), then
// Deferred when the pod's new requests do not fit beside the other pods'
// allocated ones.
func (a *Agent) admitResize(pod *v1.Pod) (bool, string, string) {
	if !podsync.IsResizeAllowed(pod) {
		return false, v1.PodReasonInfeasible, msgResizeStaticPod
	}
	node, err := a.admissionNode()
	if err != nil || node == nil {
		return false, v1.PodReasonDeferred, admission.MessageInvalidNodeInfo
	}
	reqs := podspec.Requests(pod)
	alloc := node.Status.Allocatable
	if m, ok := alloc[v1.ResourceMemory]; ok && reqs.Memory().Value() > m.Value() {
		return false, v1.PodReasonInfeasible, fmt.Sprintf("%smemory, requested: %d, capacity: %d", msgResizeCapacityPrefix, reqs.Memory().Value(), m.Value())
	}
	if c, ok := alloc[v1.ResourceCPU]; ok && reqs.Cpu().MilliValue() > c.MilliValue() {
		return false, v1.PodReasonInfeasible, fmt.Sprintf("%scpu, requested: %d, capacity: %d", msgResizeCapacityPrefix, reqs.Cpu().MilliValue(), c.MilliValue())
	}
	others := a.otherAdmittedPods(pod)
	for i, p := range others {
		others[i] = a.allocatedPod(p)
	}
	if short := admission.Fit(pod, others, alloc); len(short) > 0 {
		return false, v1.PodReasonDeferred, short[0].Message()
	}
	return true, "", ""
}

// retryPendingResizes takes up the deferred resizes again, those that
// do not ask for more first, then by priority, Guaranteed before the rest,
// and the longest waiting first; a pod whose resize conditions change is
// synced so that its status says so.
func (a *Agent) retryPendingResizes() {
	var pods []*v1.Pod
	for _, uid := range a.alloc.takePending() {
		if p, ok := a.pods.GetPodByUID(uid); ok && !a.workers.IsPodTerminationRequested(uid) {
			pods = append(pods, p)
		}
	}
	since := func(p *v1.Pod) metav1.Time {
		for _, c := range a.alloc.conditions(p.UID) {
			if c.Type == v1.PodResizePending {
				return c.LastTransitionTime
			}
		}
		return metav1.Time{}
	}
	slices.SortStableFunc(pods, func(x, y *v1.Pod) int {
		if gx, gy := a.growsRequests(x), a.growsRequests(y); gx != gy {
			if !gx {
				return -1
			}
			return 1
		}
		if px, py := priority(x), priority(y); px != py {
			if px > py {
				return -1
			}
			return 1
		}
		if qx, qy := podspec.QOSClass(x) == v1.PodQOSGuaranteed, podspec.QOSClass(y) == v1.PodQOSGuaranteed; qx != qy {
			if qx {
				return -1
			}
			return 1
		}
		tx, ty := since(x), since(y)
		return tx.Compare(ty.Time)
	})
	for _, p := range pods {
		if a.handleResize(p) {
			a.HandlePodSyncs([]*v1.Pod{p})
		}
	}
	a.alloc.flush()
}

// growsRequests says whether a pod's resize asks for more CPU or memory
// than it was allocated.
func (a *Agent) growsRequests(pod *v1.Pod) bool {
	alloc, asked := a.alloc.fromAllocation(pod)
	if !asked {
		return false
	}
	now, was := podspec.Requests(pod), podspec.Requests(alloc)
	return now.Cpu().Cmp(*was.Cpu()) > 0 || now.Memory().Cmp(*was.Memory()) > 0
}

func priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// resizeInProgress says whether a running container of the allocated pod
// does not run with its allocated resources yet, as the runtime reports
// them.
func resizeInProgress(pod *v1.Pod, rs *cri.PodStatus) bool {
	if rs == nil {
		return false
	}
	in := false
	resizable(pod, func(c *v1.Container) {
		if st := rs.ContainerByName(c.Name); st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING && !podsync.ResizeDone(c, st) {
			in = true
		}
	})
	return in
}

// trackResize keeps PodResizeInProgress in step with the runtime, as
// upstream's SyncPod does: set while an accepted resize is not actuated,
// removed once it is (the event ResizeCompleted then says so).
func (a *Agent) trackResize(pod *v1.Pod, rs *cri.PodStatus) {
	now := metav1.NewTime(a.clock.Now())
	if resizeInProgress(pod, rs) {
		if !a.alloc.hasCondition(pod.UID, v1.PodResizeInProgress) {
			a.alloc.setCondition(pod.UID, v1.PodResizeInProgress, &v1.PodCondition{ObservedGeneration: pod.Generation}, now)
		}
		return
	}
	var gen int64
	for _, c := range a.alloc.conditions(pod.UID) {
		if c.Type == v1.PodResizeInProgress {
			gen = c.ObservedGeneration
		}
	}
	if a.alloc.setCondition(pod.UID, v1.PodResizeInProgress, nil, now) {
		a.events.Eventf(pod, v1.EventTypeNormal, EventResizeCompleted, "%s", resizeMessage(pod, "Pod resize completed", "", gen))
	}
}

// resizeFailed records a resize the runtime refused: PodResizeInProgress
// with reason Error and the failure, and the event ResizeError. It reports
// whether the condition changed.
func (a *Agent) resizeFailed(pod *v1.Pod, msg string) bool {
	now := metav1.NewTime(a.clock.Now())
	if !a.alloc.setCondition(pod.UID, v1.PodResizeInProgress,
		&v1.PodCondition{Reason: v1.PodReasonError, Message: msg, ObservedGeneration: pod.Generation}, now) {
		return false
	}
	a.events.Eventf(pod, v1.EventTypeWarning, EventResizeError, "%s", resizeMessage(pod, "Pod resize error", msg))
	return true
}

// resizeMessage is upstream's event message of a resize: a prefix, then
// the containers' resources and the generation as JSON, with the error
// when there is one.
func resizeMessage(pod *v1.Pod, prefix, errMsg string, generation ...int64) string {
	type named struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []named `json:"initContainers,omitempty"`
		Containers     []named `json:"containers,omitempty"`
		Generation     int64   `json:"generation"`
		Error          string  `json:"error,omitempty"`
	}{Generation: pod.Generation, Error: errMsg}
	if len(generation) > 0 {
		summary.Generation = generation[0]
	}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, named{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, named{c.Name, c.Resources})
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}

// podCgroupResizer resizes a pod's cgroup with its runtime class's
// overhead counted, as the cgroup was made (ensurePodCgroup).
type podCgroupResizer struct{ a *Agent }

// ResizePod implements podsync.PodCgroupResizer.
func (r podCgroupResizer) ResizePod(pod *v1.Pod, grow bool) error {
	return r.a.cgroups.ResizePod(podsync.WithOverhead(pod, r.a.opts.RuntimeClasses), grow)
}
