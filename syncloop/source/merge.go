package source

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// MergerOptions configure a Merger. Every field is optional.
type MergerOptions struct {
	// Recorder receives a Warning FailedValidation event for every pod
	// refused (see Merger). Nil means none.
	Recorder EventRecorder
	// Logger receives the merger's logs; nil discards them.
	Logger *slog.Logger
	// Clock stamps the kubernetes.io/config.seen annotation; nil means the
	// real clock.
	Clock clock.PassiveClock
}

// Merger is the deterministic core of Config: the pods of every source by
// UID, and the rule that turns one source's message into the incremental
// updates of the merged stream. It has no goroutine, no lock and no channel:
// Merge takes a message and returns the updates. It is not safe for
// concurrent use; Config serializes it.
//
// The rules are upstream's podStorage.merge with
// PodConfigNotificationIncremental:
//
//   - A SET replaces the source's pods: a UID it does not hold any more is a
//     REMOVE, a new UID an ADD, and a known UID is compared with what the
//     merger holds (below).
//   - ADD, UPDATE, DELETE and RECONCILE from a source are applied one pod at
//     a time in the same way: a new UID is an ADD whatever the operation, a
//     known one is compared. REMOVE forgets the known UIDs it names.
//   - Comparing a known pod: if its spec, labels, deletionTimestamp,
//     deletionGracePeriodSeconds or annotations (except the kubelet's own
//     config.source, config.mirror and config.seen) changed, it is a DELETE
//     when the new pod has a deletionTimestamp, an UPDATE otherwise; if only
//     its status changed, a RECONCILE; otherwise nothing. Other metadata
//     (resourceVersion, ownerReferences, ...) stays as first seen, as
//     upstream.
//   - The updates of one message come in upstream's order: REMOVE, ADD,
//     UPDATE, DELETE, RECONCILE; one per kind at most, none empty.
//   - A new pod gets the annotations kubernetes.io/config.source (the
//     source's name) and kubernetes.io/config.seen (now, RFC 3339 with
//     nanoseconds); both are kept across its updates.
//   - A pod is refused, with a log line and a Warning FailedValidation event
//     (once, until the source stops sending it), when it has no UID or no
//     name, when an earlier pod of the same message has its full name
//     (name and namespace; upstream's filterInvalidPods), or when it is new
//     and its full name belongs to another pod already held, of any source
//     (a kubelet cannot run two pods of one name; upstream only checks within
//     a message), or when it is a mirror pod (annotation
//     kubernetes.io/config.mirror) from a source other than the API
//     server, which a kubelet would hold and never run. A refused pod is
//     not held, so it is considered again the
//     next time its source sends it, by when the name may be free: the file
//     and URL sources send their whole list every period.
//
// The pods in the returned updates are the merger's own copies, shared with
// later updates and Pods: nobody may modify them. A pod that changes is
// replaced by a new copy, never modified in place, so a pod once returned
// never changes under its holder. The merger never modifies the pods of the
// messages it is given either, and a source must not modify a pod after
// sending it: a pod sent again as the same pointer is taken as unchanged
// without being compared (as an informer's cache, and the File and URL
// sources, send unchanged pods).
type Merger struct {
	rec   EventRecorder
	log   *slog.Logger
	clock clock.PassiveClock

	sources map[string]*sourcePods
	names   map[fullName]owner // every held pod's full name → its owner

	gen     uint64                // SET generation, for mark and sweep
	scratch map[fullName]struct{} // names of the message being merged
}

// sourcePods is what the merger holds of one source.
type sourcePods struct {
	pods     map[types.UID]*entry
	seen     bool                   // a SET came
	rejected map[types.UID]struct{} // refused and reported; not reported again
}

type entry struct {
	pod  *v1.Pod
	sent *v1.Pod // the pod as last sent, unmodified: the same pointer again is no change
	gen  uint64
}

type fullName struct{ namespace, name string }

type owner struct {
	source string
	uid    types.UID
}

func nameOf(p *v1.Pod) fullName { return fullName{p.Namespace, p.Name} }

// NewMerger returns an empty Merger.
func NewMerger(opts MergerOptions) *Merger {
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &Merger{
		rec:     orNopRecorder(opts.Recorder),
		log:     orDiscard(opts.Logger),
		clock:   c,
		sources: map[string]*sourcePods{},
		names:   map[fullName]owner{},
		scratch: map[fullName]struct{}{},
	}
}

// Seen reports whether source has sent a SET.
func (m *Merger) Seen(source string) bool {
	s := m.sources[source]
	return s != nil && s.seen
}

// Pods returns every pod held, of all sources, sorted by namespace and name.
// The pods are shared: see Merger.
func (m *Merger) Pods() []*v1.Pod {
	var out []*v1.Pod
	for _, s := range m.sources {
		for _, e := range s.pods {
			out = append(out, e.pod)
		}
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// changes collects the pods of each kind of update one message makes.
type changes struct {
	removes, adds, updates, deletes, reconciles []*v1.Pod
}

// Merge applies one message of source (u.Source is ignored) and returns the
// updates it makes, in upstream's order, with Source set to source. An
// unknown operation changes nothing; it is logged, and each of its pods
// gets a Warning FailedValidation event.
func (m *Merger) Merge(source string, u syncloop.PodUpdate) []syncloop.PodUpdate {
	s := m.sources[source]
	if s == nil {
		s = &sourcePods{pods: map[types.UID]*entry{}, rejected: map[types.UID]struct{}{}}
		m.sources[source] = s
	}
	var ch changes
	switch u.Op {
	case syncloop.OpSet:
		m.set(source, s, u.Pods, &ch)
	case syncloop.OpAdd, syncloop.OpUpdate, syncloop.OpDelete, syncloop.OpReconcile:
		for _, p := range m.filter(source, s, u.Pods, nil) {
			m.apply(source, s, p, &ch, nil)
		}
	case syncloop.OpRemove:
		for _, p := range u.Pods {
			if p == nil {
				continue
			}
			delete(s.rejected, p.UID)
			if e, ok := s.pods[p.UID]; ok {
				m.forget(s, e.pod)
				ch.removes = append(ch.removes, e.pod)
			}
		}
	default:
		m.log.Warn("ignoring an update with an unknown operation", "source", source, "op", u.Op.String())
		for _, p := range u.Pods {
			if p != nil {
				m.rec.Eventf(p, v1.EventTypeWarning, ReasonFailedValidation,
					"Error validating pod %s from %s due to unknown operation %s, ignoring", formatPod(p), source, u.Op)
			}
		}
	}
	return ch.result(source)
}

func (ch *changes) result(source string) []syncloop.PodUpdate {
	var out []syncloop.PodUpdate
	for _, k := range []struct {
		op   syncloop.Operation
		pods []*v1.Pod
	}{
		{syncloop.OpRemove, ch.removes},
		{syncloop.OpAdd, ch.adds},
		{syncloop.OpUpdate, ch.updates},
		{syncloop.OpDelete, ch.deletes},
		{syncloop.OpReconcile, ch.reconciles},
	} {
		if len(k.pods) > 0 {
			out = append(out, syncloop.PodUpdate{Op: k.op, Source: source, Pods: k.pods})
		}
	}
	return out
}

// set replaces the pods of source s with pods.
func (m *Merger) set(source string, s *sourcePods, pods []*v1.Pod, ch *changes) {
	s.seen = true
	m.gen++
	gen := m.gen
	refused := map[types.UID]struct{}{} // refused by this SET
	valid := m.filter(source, s, pods, refused)
	// Mark what stays, sweep what goes: the names of removed pods are freed
	// before new pods claim theirs (a static pod whose manifest changed keeps
	// its name under a new UID).
	for _, p := range valid {
		if e, ok := s.pods[p.UID]; ok {
			e.gen = gen
		}
	}
	for uid, e := range s.pods {
		if e.gen != gen {
			m.forget(s, e.pod)
			ch.removes = append(ch.removes, e.pod)
			delete(s.pods, uid)
		}
	}
	slices.SortFunc(ch.removes, func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, p := range valid {
		m.apply(source, s, p, ch, refused)
	}
	s.rejected = refused
}

// filter drops the pods of one message that cannot be held: nil, no UID, no
// name, or a full name an earlier pod of the message has. A SET passes the
// set of the pods it refuses, which replaces the source's at its end.
func (m *Merger) filter(source string, s *sourcePods, pods []*v1.Pod, refused map[types.UID]struct{}) []*v1.Pod {
	clear(m.scratch)
	out := pods[:0:0]
	clean := true // out is pods so far: no copy needed
	for i, p := range pods {
		var why string
		switch {
		case p == nil:
			m.log.Warn("ignoring a nil pod", "source", source, "index", i)
		case p.UID == "":
			why = "it has no UID"
		case p.Name == "":
			why = "it has no name"
		case source != syncloop.SourceAPI && podspec.IsMirror(p):
			why = "it is a mirror pod (annotation " + podspec.ConfigMirrorAnnotation + "), which only the API server sends"
		default:
			n := nameOf(p)
			if _, dup := m.scratch[n]; dup {
				why = fmt.Sprintf("duplicate pod name %q", p.Name)
			} else {
				m.scratch[n] = struct{}{}
			}
		}
		if p == nil || why != "" {
			if clean {
				out = append(make([]*v1.Pod, 0, len(pods)), pods[:i]...)
				clean = false
			}
			if p != nil {
				m.refuse(source, s, p, why, refused)
			}
			continue
		}
		if clean {
			out = pods[:i+1]
		} else {
			out = append(out, p)
		}
	}
	return out
}

// refuse reports a pod that is not held, once until its source stops
// sending it.
func (m *Merger) refuse(source string, s *sourcePods, p *v1.Pod, why string, refused map[types.UID]struct{}) {
	if refused != nil {
		refused[p.UID] = struct{}{}
	}
	if _, told := s.rejected[p.UID]; told {
		return
	}
	s.rejected[p.UID] = struct{}{}
	m.log.Warn("pod failed validation, ignoring", "pod", validation.PodRef(p), "uid", p.UID, "source", source, "reason", why)
	m.rec.Eventf(p, v1.EventTypeWarning, ReasonFailedValidation,
		"Error validating pod %s from %s due to %s, ignoring", formatPod(p), source, why)
}

// formatPod names a pod as upstream's format.Pod: name_namespace(uid).
func formatPod(p *v1.Pod) string { return fmt.Sprintf("%s_%s(%s)", p.Name, p.Namespace, p.UID) }

// forget drops pod's name from the index.
func (m *Merger) forget(s *sourcePods, pod *v1.Pod) {
	n := nameOf(pod)
	if o, ok := m.names[n]; ok && o.uid == pod.UID {
		delete(m.names, n)
	}
	delete(s.pods, pod.UID)
}

// apply merges one valid pod of source into what s holds.
// A SET passes the set of the pods it refuses.
func (m *Merger) apply(source string, s *sourcePods, ref *v1.Pod, ch *changes, refused map[types.UID]struct{}) {
	if e, ok := s.pods[ref.UID]; ok {
		if e.sent == ref {
			return // sent again as it was: unchanged
		}
		e.sent = ref
		next, kind := compare(e.pod, ref)
		switch kind {
		case kindUpdate:
			ch.updates = append(ch.updates, next)
		case kindDelete:
			ch.deletes = append(ch.deletes, next)
		case kindReconcile:
			ch.reconciles = append(ch.reconciles, next)
		default:
			return
		}
		e.pod = next
		return
	}
	// A mirror pod is the API server's copy of a static pod and has its
	// full name by design: it neither takes nor checks the name.
	n := nameOf(ref)
	mirror := podspec.IsMirror(ref)
	if o, taken := m.names[n]; taken && o.uid != ref.UID && !mirror {
		why := fmt.Sprintf("duplicate pod name %q, held by pod %s from %s", ref.Name, o.uid, o.source)
		m.refuse(source, s, ref, why, refused)
		return
	}
	delete(s.rejected, ref.UID)
	pod := ref.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podspec.ConfigSourceAnnotation] = source
	pod.Annotations[podspec.ConfigSeenAnnotation] = m.clock.Now().Format(time.RFC3339Nano)
	s.pods[pod.UID] = &entry{pod: pod, sent: ref, gen: m.gen}
	if !mirror {
		m.names[n] = owner{source: source, uid: pod.UID}
	}
	ch.adds = append(ch.adds, pod)
}

type changeKind int

const (
	kindNone changeKind = iota
	kindUpdate
	kindDelete
	kindReconcile
)

// isLocal tells the kubelet's own annotations: ignored when comparing,
// kept from the held pod on update.
func isLocal(k string) bool {
	switch k {
	case podspec.ConfigSourceAnnotation, podspec.ConfigMirrorAnnotation, podspec.ConfigSeenAnnotation:
		return true
	}
	return false
}

// compare returns what ref changes of the held pod, and the pod to hold
// next: a new copy when something changed (upstream's checkAndUpdatePod,
// copy on write instead of in place).
func compare(held, ref *v1.Pod) (*v1.Pod, changeKind) {
	if !differ(held, ref) {
		if equal(&held.Status, &ref.Status) {
			return held, kindNone
		}
		next := *held
		next.Status = *ref.Status.DeepCopy()
		return &next, kindReconcile
	}
	next := *held
	next.Spec = *ref.Spec.DeepCopy()
	// The generation too, as upstream's since PodObservedGenerationTracking:
	// the status's observedGeneration says which spec the node acted on.
	next.Generation = ref.Generation
	next.Labels = maps.Clone(ref.Labels)
	next.DeletionTimestamp = ref.DeletionTimestamp.DeepCopy()
	next.DeletionGracePeriodSeconds = nil
	if g := ref.DeletionGracePeriodSeconds; g != nil {
		v := *g
		next.DeletionGracePeriodSeconds = &v
	}
	next.Status = *ref.Status.DeepCopy()
	ann := make(map[string]string, len(ref.Annotations)+3)
	maps.Copy(ann, ref.Annotations)
	for k, v := range held.Annotations {
		if isLocal(k) {
			ann[k] = v
		}
	}
	next.Annotations = ann
	if ref.DeletionTimestamp != nil {
		return &next, kindDelete
	}
	return &next, kindUpdate
}

// differ reports whether ref changes what a kubelet acts on (upstream's
// podsDifferSemantically).
func differ(held, ref *v1.Pod) bool {
	if !held.DeletionTimestamp.Equal(ref.DeletionTimestamp) {
		return true
	}
	if (held.DeletionGracePeriodSeconds == nil) != (ref.DeletionGracePeriodSeconds == nil) ||
		held.DeletionGracePeriodSeconds != nil && *held.DeletionGracePeriodSeconds != *ref.DeletionGracePeriodSeconds {
		return true
	}
	if !maps.Equal(held.Labels, ref.Labels) || !annotationsEqual(held.Annotations, ref.Annotations) {
		return true
	}
	return !equal(&held.Spec, &ref.Spec)
}

// equal is reflect.DeepEqual, which is exact and the fastest, falling back
// to the API's semantic equality (quantities by value, nil and empty alike)
// before calling two values different.
func equal[T any](a, b *T) bool {
	return reflect.DeepEqual(a, b) || equality.Semantic.DeepEqual(a, b)
}

// annotationsEqual compares two annotation maps without the local ones.
func annotationsEqual(held, ref map[string]string) bool {
	n := 0
	for k, v := range ref {
		if isLocal(k) {
			continue
		}
		if hv, ok := held[k]; !ok || hv != v {
			return false
		}
		n++
	}
	for k := range held {
		if !isLocal(k) {
			n--
		}
	}
	return n == 0
}
