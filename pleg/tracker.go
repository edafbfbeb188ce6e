package pleg

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// state is a container's or sandbox's state as the relist diff sees it; a
// "created" container counts as unknown, as upstream has it.
type state uint8

const (
	stateNonExistent state = iota
	stateRunning
	stateExited
	stateUnknown
)

func containerState(s runtimeapi.ContainerState) state {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return stateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return stateExited
	}
	return stateUnknown // created, unknown
}

func sandboxState(s runtimeapi.PodSandboxState) state {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return stateRunning
	}
	return stateExited
}

// item is one container or sandbox of a pod.
type item struct {
	id      string
	state   state
	sandbox bool
}

// inlineItems is how many items a pod record holds per state without a
// separate allocation: a sandbox and three containers.
const inlineItems = 4

// podRecord is what the tracker knows of one pod: the sandboxes and
// containers whose events were last delivered (old), and those the latest
// relist saw (cur, valid when seen is the tracker's generation).
type podRecord struct {
	uid             types.UID
	name, namespace string
	old, cur        []item
	oldInline       [inlineItems]item
	curInline       [inlineItems]item
	seen            uint64
	live            bool
}

func (r *podRecord) current(gen uint64) []item {
	if r.seen != gen {
		return nil
	}
	return r.cur
}

// recordChunk is how many pod records are allocated at once.
const recordChunk = 256

// tracker is the relist's deterministic core, upstream's pod records: for
// every pod, what was last delivered and what the latest relist saw. A relist
// calls observe with the runtime's lists, diff to get the events, and commit
// for each pod whose events it delivered; a pod that is not committed (its
// inspection failed) keeps its old state, so the next diff finds the same
// changes again.
//
// It is single-threaded and does no I/O. Records live in chunks and are
// reused, and diff walks them in memory order; a relist in which nothing
// changed allocates nothing.
type tracker struct {
	pods   map[types.UID]*podRecord
	chunks [][]podRecord
	free   []*podRecord
	gen    uint64

	// The previous lists' IDs and records, by position: a runtime that lists
	// in a stable order (with the same ID strings) maps each object to its
	// pod without a map lookup. spare* are the buffers for the next lists.
	lastSandboxes, lastContainers   []positioned
	spareSandboxes, spareContainers []positioned
}

// positioned is one entry of a list as last observed; rec is nil for an object
// that belongs to no pod.
type positioned struct {
	id  string
	rec *podRecord
}

func newTracker() *tracker {
	return &tracker{pods: make(map[types.UID]*podRecord)}
}

func (t *tracker) record(uid types.UID) *podRecord {
	if r := t.pods[uid]; r != nil {
		return r
	}
	var r *podRecord
	if n := len(t.free); n > 0 {
		r, t.free = t.free[n-1], t.free[:n-1]
	} else {
		last := len(t.chunks) - 1
		if last < 0 || len(t.chunks[last]) == cap(t.chunks[last]) {
			t.chunks = append(t.chunks, make([]podRecord, 0, recordChunk))
			last++
		}
		t.chunks[last] = t.chunks[last][:len(t.chunks[last])+1]
		r = &t.chunks[last][len(t.chunks[last])-1]
	}
	*r = podRecord{uid: uid, live: true}
	r.old = r.oldInline[:0]
	t.pods[uid] = r
	return r
}

// add puts an item in the pod's current state for this generation.
func (t *tracker) add(r *podRecord, it item) {
	if r.seen != t.gen {
		r.seen = t.gen
		if cap(r.cur) == 0 {
			r.cur = r.curInline[:0]
		}
		clear(r.cur)
		r.cur = r.cur[:0]
	}
	r.cur = append(r.cur, it)
}

// observe records a relist's lists as the current state of every pod; a pod
// with nothing in them is currently empty. A sandbox belongs to the pod in its
// metadata (or, failing that, its PodUIDLabel); a container to the pod of its
// PodUIDLabel, or else to the pod of its sandbox. Objects that belong to no
// pod (not created by a kubelet) are left out.
func (t *tracker) observe(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) {
	t.gen++
	next := t.spareSandboxes[:0]
	last := t.lastSandboxes
	for i, sb := range sandboxes {
		id := sb.GetId()
		var r *podRecord
		if i < len(last) && last[i].id == id {
			r = last[i].rec
		} else {
			md := sb.GetMetadata()
			uid := types.UID(md.GetUid())
			if uid == "" {
				uid = cri.PodUIDFromLabels(sb.GetLabels())
			}
			if uid != "" {
				r = t.record(uid)
				if r.name == "" && r.namespace == "" {
					r.name, r.namespace = md.GetName(), md.GetNamespace()
				}
			}
		}
		next = append(next, positioned{id, r})
		if r != nil {
			t.add(r, item{id: id, state: sandboxState(sb.GetState()), sandbox: true})
		}
	}
	clear(last)
	t.lastSandboxes, t.spareSandboxes = next, last[:0]

	var bySandbox map[string]*podRecord // only for containers without a UID label
	next = t.spareContainers[:0]
	last = t.lastContainers
	for i, c := range containers {
		id := c.GetId()
		var r *podRecord
		if i < len(last) && last[i].id == id {
			r = last[i].rec
		} else {
			labels := c.GetLabels()
			if uid := cri.PodUIDFromLabels(labels); uid != "" {
				r = t.record(uid)
				if r.name == "" && r.namespace == "" {
					r.name, r.namespace = labels[cri.PodNameLabel], labels[cri.PodNamespaceLabel]
				}
			} else {
				if bySandbox == nil {
					bySandbox = make(map[string]*podRecord, len(t.lastSandboxes))
					for _, p := range t.lastSandboxes {
						bySandbox[p.id] = p.rec
					}
				}
				r = bySandbox[c.GetPodSandboxId()]
			}
		}
		next = append(next, positioned{id, r})
		if r != nil {
			t.add(r, item{id: id, state: containerState(c.GetState())})
		}
	}
	clear(last)
	t.lastContainers, t.spareContainers = next, last[:0]
}

// diff appends to dst the events that turn each pod's old state into its
// current one, and returns the extended slice. For each container or sandbox
// whose state differs it emits upstream's events: to running,
// ContainerStarted; to exited, ContainerDied; to created or unknown,
// ContainerChanged; gone, ContainerRemoved (preceded by ContainerDied unless it
// was already seen exited). Events are ordered by pod UID, then containers
// before sandboxes, then ID, so the result does not depend on the order the
// runtime listed things in.
//
// A pod whose objects come in the same order with the same states costs a
// comparison of a few strings (pointer-equal when the runtime reuses them);
// diff allocates nothing beyond growing dst.
func (t *tracker) diff(dst []Event) []Event {
	start := len(dst)
	for _, chunk := range t.chunks {
		for i := range chunk {
			r := &chunk[i]
			if !r.live {
				continue
			}
			dst = diffItems(dst, r.uid, r.old, r.current(t.gen))
		}
	}
	if len(dst)-start > 1 {
		slices.SortStableFunc(dst[start:], eventOrder)
	}
	return dst
}

func eventOrder(a, b Event) int {
	if c := cmp.Compare(a.PodUID, b.PodUID); c != 0 {
		return c
	}
	if a.Sandbox != b.Sandbox {
		if b.Sandbox {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.ContainerID, b.ContainerID)
}

// diffItems compares one pod's old and current items.
func diffItems(dst []Event, uid types.UID, old, cur []item) []Event {
	if slices.Equal(old, cur) {
		return dst
	}
	for _, o := range old {
		to := stateNonExistent
		if j := indexItem(cur, o); j >= 0 {
			to = cur[j].state
		}
		dst = appendEvents(dst, uid, o.id, o.sandbox, o.state, to)
	}
	for _, c := range cur {
		if indexItem(old, c) < 0 {
			dst = appendEvents(dst, uid, c.id, c.sandbox, stateNonExistent, c.state)
		}
	}
	return dst
}

func indexItem(items []item, it item) int {
	for i := range items {
		if items[i].id == it.id && items[i].sandbox == it.sandbox {
			return i
		}
	}
	return -1
}

// appendEvents is upstream's table of events for one state transition.
func appendEvents(dst []Event, uid types.UID, id string, sandbox bool, from, to state) []Event {
	if from == to {
		return dst
	}
	ev := Event{PodUID: uid, ContainerID: id, Sandbox: sandbox}
	switch to {
	case stateRunning:
		ev.Type = ContainerStarted
	case stateExited:
		ev.Type = ContainerDied
	case stateUnknown:
		ev.Type = ContainerChanged
	case stateNonExistent:
		if from != stateExited {
			died := ev
			died.Type = ContainerDied
			dst = append(dst, died)
		}
		ev.Type = ContainerRemoved
	}
	return append(dst, ev)
}

// commit makes the pod's current state its delivered one. A pod with nothing
// left is forgotten.
func (t *tracker) commit(uid types.UID) {
	r := t.pods[uid]
	if r == nil {
		return
	}
	cur := r.current(t.gen)
	if len(cur) == 0 {
		delete(t.pods, uid)
		*r = podRecord{}
		t.free = append(t.free, r)
		return
	}
	clear(r.old)
	r.old = append(r.old[:0], cur...)
}

// podIDs is what the latest relist saw of a pod.
type podIDs struct {
	name, namespace       string
	sandboxes, containers []string
}

// pod returns what the latest relist saw of the pod: its name and namespace
// and the IDs of its sandboxes and containers; ok is false when it saw
// nothing. The IDs are appended to ids, which is returned extended, and the
// result's slices are parts of it (capped, so that appending to one cannot
// overwrite the other): a relist gathers every pod's IDs in one buffer.
func (t *tracker) pod(ids []string, uid types.UID) (_ []string, p podIDs, ok bool) {
	r := t.pods[uid]
	if r == nil {
		return ids, podIDs{}, false
	}
	cur := r.current(t.gen)
	if len(cur) == 0 {
		return ids, podIDs{}, false
	}
	start := len(ids)
	for _, it := range cur {
		if it.sandbox {
			ids = append(ids, it.id)
		}
	}
	mid := len(ids)
	for _, it := range cur {
		if !it.sandbox {
			ids = append(ids, it.id)
		}
	}
	return ids, podIDs{name: r.name, namespace: r.namespace, sandboxes: ids[start:mid:mid], containers: ids[mid:len(ids):len(ids)]}, true
}

// len returns the number of pods tracked.
func (t *tracker) len() int { return len(t.pods) }
