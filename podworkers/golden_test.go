package podworkers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/internal/golden"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// TestGolden replays every transcript in testdata/ (see package
// internal/golden for the format) against a Machine. After each command the
// harness prints, besides the command's own output, the workers the Machine
// asked for ("ready: ...") and every state change of a pod. Run with -update
// to rewrite the expected output.
func TestGolden(t *testing.T) {
	golden.Run(t, func(t *testing.T) func(golden.Case) []string {
		h := newHarness(t)
		return func(c golden.Case) []string {
			if len(c.Input) > 0 {
				t.Fatalf("%s:%d: %s takes no input lines", c.File, c.Line, c.Command)
			}
			return golden.Lines(h.exec(c.Command))
		}
	})
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness drives a Machine for a transcript.
type harness struct {
	t      *testing.T
	m      *Machine
	now    time.Time
	pods   map[types.UID]*v1.Pod
	states map[types.UID]State
	work   map[types.UID]Work // in flight
	fns    map[string]PodStatusFunc
}

func newHarness(t *testing.T) *harness {
	m, err := NewMachine(MachineOptions{Rand: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{
		t:      t,
		m:      m,
		now:    epoch,
		pods:   map[types.UID]*v1.Pod{},
		states: map[types.UID]State{},
		work:   map[types.UID]Work{},
		fns:    map[string]PodStatusFunc{},
	}
}

func (h *harness) rel(ts time.Time) string {
	if ts.IsZero() {
		return "never"
	}
	return "t=" + ts.Sub(epoch).String()
}

// exec runs one command and returns its output.
func (h *harness) exec(line string) string {
	fields := strings.Fields(line)
	cmd, args := fields[0], fields[1:]
	var out []string
	switch cmd {
	case "options":
		out = h.options(args)
	case "pod":
		h.pod(args)
	case "update":
		out = h.update(args)
	case "running":
		out = h.running(args)
	case "next":
		out = h.next(args[0])
	case "complete":
		out = h.complete(args[0], args[1:])
	case "run":
		out = h.run(args[0], args[1:])
	case "tick":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			h.t.Fatalf("%s: %v", line, err)
		}
		h.now = h.now.Add(d)
		out = append(out, h.rel(h.now))
	case "resync":
		due := h.m.Resync(h.now)
		out = append(out, "due: "+joinUIDs(due))
	case "known":
		out = h.known(args)
	case "predicates":
		out = h.predicates(args[0])
	case "mirror-terminating":
		out = append(out, strconv.FormatBool(h.m.IsPodForMirrorPodTerminatingByFullName(args[0])))
	default:
		h.t.Fatalf("unknown command %q", line)
	}
	if r := h.m.Ready(); len(r) > 0 {
		out = append(out, "ready: "+joinUIDs(r))
	}
	out = append(out, h.transitions()...)
	return strings.Join(out, "\n")
}

func joinUIDs(uids []types.UID) string {
	if len(uids) == 0 {
		return "none"
	}
	s := make([]string, len(uids))
	for i, u := range uids {
		s[i] = string(u)
	}
	return strings.Join(s, " ")
}

// transitions lists state changes since the previous command.
func (h *harness) transitions() []string {
	var out []string
	seen := map[types.UID]bool{}
	for uid := range h.m.pods {
		seen[uid] = true
		st, _ := h.m.State(uid)
		old, ok := h.states[uid]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: new, %s", uid, st))
		case old != st:
			out = append(out, fmt.Sprintf("%s: %s -> %s", uid, old, st))
		}
		h.states[uid] = st
	}
	for uid := range h.states {
		if !seen[uid] {
			out = append(out, fmt.Sprintf("%s: forgotten", uid))
			delete(h.states, uid)
		}
	}
	slices.Sort(out)
	return out
}

func kv(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

func (h *harness) int64(s string) *int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		h.t.Fatal(err)
	}
	return &n
}

func (h *harness) options(args []string) []string {
	a := kv(args)
	var opts MachineOptions
	if _, ok := a["serialize-by-full-name"]; ok {
		opts.SerializeByFullName = true
	}
	if j, ok := a["jitter"]; ok {
		f, err := strconv.ParseFloat(j, 64)
		if err != nil {
			h.t.Fatal(err)
		}
		opts.Rand = func() float64 { return f }
	} else {
		opts.Rand = func() float64 { return 0 }
	}
	m, err := NewMachine(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.m = m
	return nil
}

// pod <uid> [name=N] [ns=NS] [static] [grace=S] [phase=P] [delete=S]
// defines or changes (as a new object) the pod with that UID.
func (h *harness) pod(args []string) {
	uid := types.UID(args[0])
	a := kv(args[1:])
	var p *v1.Pod
	if old := h.pods[uid]; old != nil {
		p = old.DeepCopy()
	} else {
		p = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: string(uid), Namespace: "default"}}
		p.Spec.TerminationGracePeriodSeconds = h.int64("30")
	}
	if v, ok := a["name"]; ok {
		p.Name = v
	}
	if v, ok := a["ns"]; ok {
		p.Namespace = v
	}
	if _, ok := a["static"]; ok {
		p.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "file"}
	}
	if v, ok := a["grace"]; ok {
		if v == "nil" {
			p.Spec.TerminationGracePeriodSeconds = nil
		} else {
			p.Spec.TerminationGracePeriodSeconds = h.int64(v)
		}
	}
	if v, ok := a["phase"]; ok {
		p.Status.Phase = v1.PodPhase(v)
	}
	if v, ok := a["delete"]; ok {
		ts := metav1.NewTime(h.now)
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = h.int64(v)
	}
	h.pods[uid] = p
}

var updateTypes = map[string]UpdateType{"create": SyncPodCreate, "update": SyncPodUpdate, "sync": SyncPodSync, "kill": SyncPodKill}

// update <uid> type=T [mirror=UID] [evict] [override=S] [statusfn=NAME]
func (h *harness) update(args []string) []string {
	uid := types.UID(args[0])
	a := kv(args[1:])
	opts := UpdatePodOptions{Pod: h.pods[uid]}
	if opts.Pod == nil {
		h.t.Fatalf("update: no pod %s", uid)
	}
	t, ok := updateTypes[a["type"]]
	if !ok {
		h.t.Fatalf("update %s: bad type %q", uid, a["type"])
	}
	opts.UpdateType = t
	if v, ok := a["mirror"]; ok {
		opts.MirrorPod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(v), Name: opts.Pod.Name, Namespace: opts.Pod.Namespace}}
	}
	if _, ok := a["evict"]; ok {
		opts.KillPodOptions.Evict = true
	}
	if v, ok := a["override"]; ok {
		opts.KillPodOptions.PodTerminationGracePeriodSecondsOverride = h.int64(v)
	}
	if v, ok := a["statusfn"]; ok {
		name := v
		fn := PodStatusFunc(func(s *v1.PodStatus) { s.Reason = name })
		h.fns[name] = fn
		opts.KillPodOptions.PodStatusFunc = fn
	}
	return h.apply(opts)
}

func (h *harness) apply(opts UpdatePodOptions) []string {
	cancel, err := h.m.Update(h.now, opts)
	switch {
	case err != nil:
		return []string{"error: " + err.Error()}
	case cancel:
		return []string{"cancel " + string(opts.uid())}
	}
	return nil
}

// running <uid> [name=N] [ns=NS] [type=T]: an update with only a RunningPod.
func (h *harness) running(args []string) []string {
	uid := types.UID(args[0])
	a := kv(args[1:])
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: string(uid), Namespace: "default"}}
	if v, ok := a["name"]; ok {
		p.Name = v
	}
	if v, ok := a["ns"]; ok {
		p.Namespace = v
	}
	t := SyncPodKill
	if v, ok := a["type"]; ok {
		t = updateTypes[v]
	}
	return h.apply(UpdatePodOptions{UpdateType: t, RunningPod: p})
}

func (h *harness) describe(w Work) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", w.Kind, w.UID)
	switch w.Kind {
	case WorkSync:
		fmt.Fprintf(&b, " type=%s", w.UpdateType)
		if w.MirrorPod != nil {
			fmt.Fprintf(&b, " mirror=%s", w.MirrorPod.UID)
		}
	case WorkTerminating:
		fmt.Fprintf(&b, " grace=%d", w.GracePeriodSeconds)
		if w.PodStatusFunc != nil {
			var st v1.PodStatus
			w.PodStatusFunc(&st)
			fmt.Fprintf(&b, " statusfn=%s", st.Reason)
		}
	case WorkTerminatingRuntime:
		fmt.Fprintf(&b, " name=%s/%s", w.Pod.Namespace, w.Pod.Name)
	}
	if w.Kind != WorkTerminatingRuntime {
		fmt.Fprintf(&b, " newer-than=%s", h.rel(w.NewerThan))
	}
	if w.Pod != nil && w.Pod.DeletionTimestamp != nil && w.Kind != WorkTerminatingRuntime {
		b.WriteString(" deleted")
	}
	return b.String()
}

func (h *harness) next(uid string) []string {
	if _, ok := h.work[types.UID(uid)]; ok {
		h.t.Fatalf("next %s: work in flight; complete it first", uid)
	}
	w, ok := h.m.Next(h.now, types.UID(uid))
	if !ok {
		return []string{"none: worker " + uid + " ends"}
	}
	h.work[w.UID] = w
	return []string{h.describe(w)}
}

// result parses ok | terminal | err=MSG | canceled | retry-after=D.
func (h *harness) result(s string) Result {
	k, v, _ := strings.Cut(s, "=")
	switch k {
	case "ok":
		return Result{}
	case "terminal":
		return Result{Terminal: true}
	case "err":
		return Result{Err: errors.New(v)}
	case "canceled":
		return Result{Err: fmt.Errorf("sync: %w", context.Canceled)}
	case "retry-after":
		d, err := time.ParseDuration(v)
		if err != nil {
			h.t.Fatal(err)
		}
		return Result{Err: RetryAfter(d, errors.New("network not ready"))}
	}
	h.t.Fatalf("bad result %q", s)
	return Result{}
}

func (h *harness) complete(uid string, args []string) []string {
	r := Result{}
	if len(args) > 0 {
		r = h.result(args[0])
	}
	return h.completeWith(types.UID(uid), r)
}

func (h *harness) completeWith(uid types.UID, r Result) []string {
	if err := h.m.Complete(h.now, uid, r); err != nil {
		return []string{"error: " + err.Error()}
	}
	delete(h.work, uid)
	if s := h.m.pods[uid]; s != nil && s.heapIndex >= 0 {
		return []string{fmt.Sprintf("requeue %s at %s", uid, h.rel(s.dueAt))}
	}
	return nil
}

// run <uid> result...: loop Next and Complete like a worker, with one
// scripted result per unit of work, until Next returns false or the results
// run out (the last work then stays in flight).
func (h *harness) run(uid string, results []string) []string {
	if _, ok := h.work[types.UID(uid)]; ok {
		h.t.Fatalf("run %s: work in flight; complete it first", uid)
	}
	var out []string
	for {
		w, ok := h.m.Next(h.now, types.UID(uid))
		if !ok {
			return append(out, "worker "+uid+" ends")
		}
		if len(results) == 0 {
			h.work[w.UID] = w
			return append(out, h.describe(w)+" (in flight)")
		}
		r := results[0]
		results = results[1:]
		out = append(out, h.describe(w)+" -> "+r)
		out = append(out, h.completeWith(w.UID, h.result(r))...)
		out = append(out, h.transitions()...)
	}
}

// known uid...: SyncKnownPods with those pods desired.
func (h *harness) known(uids []string) []string {
	var desired []*v1.Pod
	for _, u := range uids {
		p := h.pods[types.UID(u)]
		if p == nil {
			h.t.Fatalf("known: no pod %s", u)
		}
		desired = append(desired, p)
	}
	got := h.m.SyncKnownPods(h.now, desired)
	var out []string
	for uid, s := range got {
		l := fmt.Sprintf("known %s: %s", uid, s.State)
		if s.Orphan {
			l += " orphan"
		}
		if s.HasConfig {
			l += " config"
		}
		if s.Static {
			l += " static"
		}
		out = append(out, l)
	}
	slices.Sort(out)
	for uid := range h.work {
		if h.m.Superseded(uid) {
			out = append(out, "cancel "+string(uid))
		}
	}
	if len(out) == 0 {
		out = append(out, "known: none")
	}
	return out
}

func (h *harness) predicates(uid string) []string {
	u := types.UID(uid)
	b := func(name string, v bool) string {
		if v {
			return name
		}
		return "!" + name
	}
	return []string{strings.Join([]string{
		b("known", h.m.IsPodKnownToWorker(u)),
		b("termination-requested", h.m.IsPodTerminationRequested(u)),
		b("containers-terminating", h.m.ShouldPodContainersBeTerminating(u)),
		b("could-run", h.m.CouldHaveRunningContainers(u)),
		b("known-terminated", h.m.IsPodKnownTerminated(u)),
		b("runtime-removable", h.m.ShouldPodRuntimeBeRemoved(u)),
		b("content-removable", h.m.ShouldPodContentBeRemoved(u)),
		b("finished", h.m.ShouldPodBeFinished(u)),
	}, " ")}
}
