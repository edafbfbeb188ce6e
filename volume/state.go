package volume

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The reconciler's core: the desired state (pods and the volumes they
// need), the actual state (what is set up), and plan, which compares them
// and returns the operations to perform. It does no I/O and reads no clock:
// the driver (manager.go) passes the time in, performs the operations and
// reports each result with complete. Not safe for concurrent use; the
// Manager holds its lock around every call.

// opKind is what an operation does.
type opKind uint8

const (
	opTearDown    opKind = iota + 1 // unmount a volume no longer desired
	opSetUp                         // set up (or refresh) a desired volume
	opCleanPodDir                   // remove the empty volume directories of a pod that is gone
)

func (k opKind) String() string {
	switch k {
	case opTearDown:
		return "TearDown"
	case opSetUp:
		return "SetUp"
	case opCleanPodDir:
		return "CleanPodDir"
	}
	return fmt.Sprintf("opKind(%d)", k)
}

// operation is one step for the driver.
type operation struct {
	kind     opKind
	uid      types.UID
	name     string // the volume; empty for opCleanPodDir
	dir      string // the name of its directory (name, or its persistent volume's)
	plugin   Plugin
	pod      *v1.Pod              // opSetUp only
	spec     *v1.Volume           // opSetUp only
	pv       *v1.PersistentVolume // opSetUp of a claim's volume only
	readOnly bool                 // the claim's readOnly, with pv
	remount  bool                 // opSetUp of a volume already set up
	verify   bool                 // opSetUp: the volume's first, which checks it is attached (OpVerifyAttached)
	metric   string               // the volume's qualified plugin name, for Metrics
	started  time.Time            // when plan returned it
	gen      uint64               // opSetUp: the pod's refreshGen
}

// dirName is the name of the operation's volume directory.
func (o operation) dirName() string {
	if o.dir != "" {
		return o.dir
	}
	return o.name
}

func (o operation) String() string {
	s := o.kind.String() + " " + string(o.uid)
	if o.name != "" {
		s += "/" + o.name
	}
	if o.remount {
		s += " (remount)"
	}
	return s
}

// desiredVol is one volume a desired pod needs.
type desiredVol struct {
	spec    *v1.Volume
	plugin  Plugin
	remount bool   // the plugin refreshes content
	err     error  // the volume cannot be processed (bad spec, no plugin)
	metric  string // the qualified plugin name (QualifiedPluginName)
	// A claim's volume (persistentVolumeClaim, ephemeral): its directory
	// is named after the bound persistent volume.
	bound *boundVolume
}

// dirName is the name of the volume's directory: the persistent volume's
// for a claim's volume, as upstream names it, else the volume's.
func (d *desiredVol) dirName() string {
	if d.bound != nil {
		return d.bound.pv.Name
	}
	return d.spec.Name
}

type desiredPod struct {
	pod        *v1.Pod
	vols       []desiredVol
	refreshGen uint64 // bumped to refresh; a volume set up at an older one is set up again
}

// actualVol is a volume that is set up (or was found on disk).
type actualVol struct {
	plugin        Plugin
	dir           string // the name of its directory
	metric        string // the qualified plugin name (QualifiedPluginName)
	mounted       Mounted
	setUpAt       time.Time // when the last successful SetUp started
	refreshGen    uint64    // the pod's refreshGen when it started
	reconstructed bool      // found on disk, not set up by this process
	// uncertain: a SetUp failed before any succeeded, so something may
	// be half set up (a CSI volume staged but not published, a directory
	// created); it is torn down if the pod goes, set up again if not.
	uncertain bool
	// What the last successful SetUp was given: the pod, its volume and
	// the claim's persistent volume and readOnly (nil when found on disk
	// or uncertain), what a Measurer measures the volume from.
	pod      *v1.Pod
	spec     *v1.Volume
	pv       *v1.PersistentVolume
	readOnly bool
}

// usable reports whether the volume is known to be set up.
func (a *actualVol) usable() bool { return a != nil && !a.reconstructed && !a.uncertain }

// failure is the last error of a volume's operations and its backoff.
type failure struct {
	err      error
	attempts int
	retryAt  time.Time
}

// volState is one volume of one pod: desired, actual, or both.
type volState struct {
	name     string
	want     *desiredVol // nil: not desired
	have     *actualVol  // nil: not set up
	inflight bool
	fail     *failure
}

// desired reports whether the volume should be set up.
func (v *volState) desired() bool { return v.want != nil && v.want.err == nil }

// podState is everything the reconciler knows about one pod.
type podState struct {
	uid     types.UID
	index   int         // in reconciler.list
	desired *desiredPod // nil: not desired
	vols    []*volState
	dir     bool // the pod has a directory that may need cleaning
	dirBusy bool // its cleaning is in flight
	// dirty makes plan look at the pod; otherwise plan skips it until
	// nextDue (a refresh or a retry), so a node where nothing changes
	// costs one comparison per pod.
	dirty   bool
	nextDue time.Time
}

func (p *podState) vol(name string) *volState {
	for _, v := range p.vols {
		if v.name == name {
			return v
		}
	}
	return nil
}

func (p *podState) addVol(name string) *volState {
	v := &volState{name: name}
	p.vols = append(p.vols, v)
	return v
}

// adopt renames to name a volume found on disk in the directory a claim's
// volume uses (the persistent volume's name, which is all a restart
// knows of it) and returns it; nil when there is none.
func (p *podState) adopt(name string, dv *desiredVol) *volState {
	if dv.err != nil || dv.bound == nil {
		return nil
	}
	v := p.vol(dv.dirName())
	if v == nil || v.want != nil || v.have == nil || !v.have.reconstructed || v.have.plugin != dv.plugin || v.inflight {
		return nil
	}
	v.name = name
	return v
}

// prune drops the volumes that are neither desired, set up nor busy.
func (p *podState) prune() {
	vols := p.vols[:0]
	for _, v := range p.vols {
		if v.want != nil || v.have != nil || v.inflight {
			vols = append(vols, v)
		}
	}
	clear(p.vols[len(vols):])
	p.vols = vols
}

func (p *podState) due(t time.Time) {
	if p.nextDue.IsZero() || t.Before(p.nextDue) {
		p.nextDue = t
	}
}

type reconciler struct {
	refresh time.Duration
	// active reports whether the agent still runs a pod (Options.ActivePod;
	// nil: none): its volumes found on disk wait for its WaitForMount.
	active func(types.UID) bool
	pods   map[types.UID]*podState
	list   []*podState // the same pods, for iteration
}

func newReconciler(refresh time.Duration, active func(types.UID) bool) *reconciler {
	return &reconciler{refresh: refresh, active: active, pods: map[types.UID]*podState{}}
}

func (r *reconciler) pod(uid types.UID) *podState {
	p := r.pods[uid]
	if p == nil {
		p = &podState{uid: uid, index: len(r.list)}
		r.pods[uid] = p
		r.list = append(r.list, p)
	}
	return p
}

// forget drops a pod that is neither desired nor has anything left.
func (r *reconciler) forget(p *podState) {
	if p.desired != nil || len(p.vols) > 0 || p.dir || p.dirBusy {
		return
	}
	last := r.list[len(r.list)-1]
	r.list[p.index] = last
	last.index = p.index
	r.list[len(r.list)-1] = nil
	r.list = r.list[:len(r.list)-1]
	delete(r.pods, p.uid)
}

// setPod makes pod desired with vols (replacing what it had). A change of
// the pod's labels or annotations refreshes its volumes (downwardAPI).
func (r *reconciler) setPod(pod *v1.Pod, vols []desiredVol) {
	p := r.pod(pod.UID)
	if p.desired == nil {
		p.desired = &desiredPod{}
	} else if !maps.Equal(p.desired.pod.Labels, pod.Labels) || !maps.Equal(p.desired.pod.Annotations, pod.Annotations) {
		p.desired.refreshGen++
	}
	p.desired.pod, p.desired.vols = pod, vols
	for _, v := range p.vols {
		v.want = nil
	}
	for i := range vols {
		name := vols[i].spec.Name
		v := p.vol(name)
		if v == nil {
			v = p.adopt(name, &vols[i])
		}
		if v == nil {
			v = p.addVol(name)
		}
		if v.want == nil { // the first of duplicates wins; all carry the error
			v.want = &vols[i]
		}
	}
	p.prune()
	p.dirty = true
}

// refreshPod makes the pod's refreshable volumes be set up again.
func (r *reconciler) refreshPod(uid types.UID) bool {
	p := r.pods[uid]
	if p == nil || p.desired == nil {
		return false
	}
	p.desired.refreshGen++
	for _, v := range p.vols {
		v.fail = nil // retry at once
	}
	p.dirty = true
	return true
}

// removePod makes the pod not desired; its volumes get torn down.
func (r *reconciler) removePod(uid types.UID) {
	p := r.pods[uid]
	if p == nil || p.desired == nil {
		// Not known, or removed already: a tear down that failed keeps
		// its backoff, however often the pod is removed again.
		return
	}
	p.desired = nil
	for _, v := range p.vols {
		v.want = nil
		v.fail = nil // a setup's backoff must not delay the teardown
	}
	p.prune()
	p.dirty = true
	r.forget(p)
}

// addReconstructed records a volume found on disk; metric is its
// qualified plugin name.
func (r *reconciler) addReconstructed(uid types.UID, name string, pl Plugin, metric string) {
	p := r.pod(uid)
	v := p.vol(name)
	if v == nil {
		v = p.addVol(name)
	}
	if v.have == nil {
		v.have = &actualVol{plugin: pl, dir: name, metric: metric, reconstructed: true}
	}
	p.dir, p.dirty = true, true
}

// addPodDir records a pod directory found on disk.
func (r *reconciler) addPodDir(uid types.UID) {
	p := r.pod(uid)
	p.dir, p.dirty = true, true
}

// plan appends to out the operations that bring the actual state to the
// desired one, marks them in flight, and returns out: teardowns first, then
// setups, then pod directory cleanups, each sorted by pod and volume.
// Volumes found on disk are not torn down, nor pod directories cleaned,
// until sourcesReady. With nothing to do it allocates nothing.
func (r *reconciler) plan(now time.Time, sourcesReady bool, out []operation) []operation {
	start := len(out)
	for _, p := range r.list {
		if !p.dirty && (p.nextDue.IsZero() || now.Before(p.nextDue)) {
			continue
		}
		out = r.planPod(p, now, sourcesReady, out)
	}
	ops := out[start:]
	if len(ops) > 1 {
		sort.Slice(ops, func(i, j int) bool {
			a, b := ops[i], ops[j]
			if a.kind != b.kind {
				return a.kind < b.kind
			}
			if a.uid != b.uid {
				return a.uid < b.uid
			}
			return a.name < b.name
		})
	}
	return out
}

// planPod plans one pod and marks its operations in flight.
func (r *reconciler) planPod(p *podState, now time.Time, sourcesReady bool, out []operation) []operation {
	p.dirty, p.nextDue = false, time.Time{}
	if p.dirBusy {
		return out // the cleaning's completion makes the pod dirty again
	}
	busy := false
	for _, v := range p.vols {
		if v.inflight {
			busy = true
			continue // its completion makes the pod dirty
		}
		if v.fail != nil && now.Before(v.fail.retryAt) {
			p.due(v.fail.retryAt)
			busy = busy || v.have != nil
			continue
		}
		if !v.desired() || p.desired == nil {
			if v.have == nil {
				continue
			}
			busy = true
			if v.have.reconstructed && (!sourcesReady || (r.active != nil && r.active(p.uid))) {
				// Look again once the sources are ready, or once the pod's
				// worker asks for its volumes (they are then adopted, not
				// set up anew) or the pod goes.
				p.dirty = true
				continue
			}
			v.inflight = true
			out = append(out, operation{kind: opTearDown, uid: p.uid, name: v.name, dir: v.have.dir, plugin: v.have.plugin, metric: v.have.metric, started: now})
			continue
		}
		remount := false
		if v.have.usable() {
			if !v.want.remount {
				continue
			}
			due := v.have.setUpAt.Add(r.refresh)
			if now.Before(due) && v.have.refreshGen == p.desired.refreshGen {
				p.due(due)
				continue
			}
			remount = true
		}
		v.inflight = true
		op := operation{kind: opSetUp, uid: p.uid, name: v.name, dir: v.want.dirName(), plugin: v.want.plugin, pod: p.desired.pod,
			spec: v.want.spec, remount: remount, started: now, gen: p.desired.refreshGen, metric: v.want.metric}
		if b := v.want.bound; b != nil {
			op.pv, op.readOnly = b.pv, b.readOnly
		}
		op.verify = v.have == nil && !r.setUpElsewhere(p, v.want)
		out = append(out, op)
	}
	if p.desired == nil && p.dir && !busy {
		if !sourcesReady {
			p.dirty = true
		} else {
			p.dirBusy = true
			out = append(out, operation{kind: opCleanPodDir, uid: p.uid, started: now})
		}
	}
	return out
}

// backoff is the wait after the n-th consecutive failure.
func backoff(n int) time.Duration {
	d := backoffInitial
	for i := 1; i < n; i++ {
		d *= 2
		if d >= backoffMax {
			return backoffMax
		}
	}
	return d
}

// complete records an operation's result.
func (r *reconciler) complete(op operation, m Mounted, err error, now time.Time) {
	p := r.pods[op.uid]
	if p == nil {
		return // cannot happen: an operation in flight keeps its pod
	}
	p.dirty = true
	if op.kind == opCleanPodDir {
		p.dirBusy, p.dir = false, false // tried once; the driver logged a failure
		r.forget(p)
		return
	}
	v := p.vol(op.name)
	if v == nil {
		return // cannot happen, as above
	}
	v.inflight = false
	if op.kind == opSetUp {
		p.dir = true
	}
	if err != nil {
		if v.fail == nil {
			v.fail = &failure{}
		}
		v.fail.err, v.fail.attempts = err, v.fail.attempts+1
		v.fail.retryAt = now.Add(backoff(v.fail.attempts))
		if op.kind == opSetUp {
			if v.have == nil {
				v.have = &actualVol{plugin: op.plugin, dir: op.dir, metric: op.metric, uncertain: true}
			}
			if v.want == nil || p.desired == nil {
				v.fail = nil // the pod went meanwhile: tear down at once
			}
		}
		return
	}
	v.fail = nil
	switch op.kind {
	case opSetUp:
		v.have = &actualVol{plugin: op.plugin, dir: op.dir, metric: op.metric, mounted: m, setUpAt: op.started, refreshGen: op.gen,
			pod: op.pod, spec: op.spec, pv: op.pv, readOnly: op.readOnly}
	case opTearDown:
		v.have = nil
		p.prune()
		r.forget(p)
	}
}

// podMountState is what WaitForMount reports on.
type podMountState struct {
	removed   bool             // the pod is not desired
	unmounted []string         // desired volumes not set up, sorted
	failed    []string         // volumes that cannot be processed, sorted
	errs      map[string]error // the last error of each volume that has one
}

func (s podMountState) done() bool {
	return !s.removed && len(s.unmounted) == 0 && len(s.failed) == 0
}

// mountState reports on a desired pod.
func (r *reconciler) mountState(uid types.UID) podMountState {
	var st podMountState
	p := r.pods[uid]
	if p == nil || p.desired == nil {
		st.removed = true
		return st
	}
	for i := range p.desired.vols {
		dv := &p.desired.vols[i]
		name := dv.spec.Name
		if dv.err != nil {
			st.failed = append(st.failed, name)
			st.unmounted = append(st.unmounted, name)
			st.setErr(name, dv.err)
			continue
		}
		v := p.vol(name)
		if v == nil || !v.have.usable() {
			st.unmounted = append(st.unmounted, name)
			if v != nil && v.fail != nil {
				st.setErr(name, v.fail.err)
			}
		}
	}
	slices.Sort(st.unmounted)
	slices.Sort(st.failed)
	st.unmounted, st.failed = slices.Compact(st.unmounted), slices.Compact(st.failed)
	return st
}

func (s *podMountState) setErr(name string, err error) {
	if s.errs == nil {
		s.errs = map[string]error{}
	}
	s.errs[name] = err
}

// reasons formats the errors, sorted by volume: `volume "a": ...; volume "b": ...`.
func (s podMountState) reasons() string {
	names := slices.Sorted(maps.Keys(s.errs))
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("volume %q: %v", n, s.errs[n]))
	}
	return strings.Join(parts, "; ")
}

// errList returns the errors, sorted by volume.
func (s podMountState) errList() []error {
	out := make([]error, 0, len(s.errs))
	for _, n := range slices.Sorted(maps.Keys(s.errs)) {
		out = append(out, s.errs[n])
	}
	return out
}

// unmountState reports the last tear down error of each volume of a pod
// still set up (only errs is set).
func (r *reconciler) unmountState(uid types.UID) podMountState {
	var st podMountState
	p := r.pods[uid]
	if p == nil {
		return st
	}
	for _, v := range p.vols {
		if v.have != nil && v.fail != nil {
			st.setErr(v.name, v.fail.err)
		}
	}
	return st
}

// mountedVolumes lists what is still set up for a pod (or in flight),
// sorted; empty when the pod's volumes are all torn down.
func (r *reconciler) mountedVolumes(uid types.UID) []string {
	p := r.pods[uid]
	if p == nil {
		return nil
	}
	var out []string
	for _, v := range p.vols {
		if v.have != nil || v.inflight {
			out = append(out, v.name)
		}
	}
	slices.Sort(out)
	return out
}

// mounted returns what is set up for a pod (not volumes only found on
// disk), by name.
func (r *reconciler) mounted(uid types.UID) map[string]Mounted {
	p := r.pods[uid]
	if p == nil {
		return nil
	}
	out := make(map[string]Mounted, len(p.vols))
	for _, v := range p.vols {
		if v.have.usable() {
			out[v.name] = v.have.mounted
		}
	}
	return out
}

// setUpVol is a volume set up for a pod, with what it was set up from.
type setUpVol struct {
	name     string
	dir      string // the name of its directory
	plugin   Plugin
	pod      *v1.Pod
	spec     *v1.Volume
	pv       *v1.PersistentVolume
	readOnly bool
}

// setUpVolumes lists the pod's volumes that this process set up and that
// are usable (not only found on disk, not uncertain, not being torn
// down), whether the pod is still desired or its volumes wait for their
// tear down, as upstream's mounted volumes; sorted by name.
func (r *reconciler) setUpVolumes(uid types.UID) []setUpVol {
	p := r.pods[uid]
	if p == nil {
		return nil
	}
	var out []setUpVol
	for _, v := range p.vols {
		if v.inflight && !v.desired() {
			continue // being torn down
		}
		if a := v.have; a.usable() && a.pod != nil && a.spec != nil {
			out = append(out, setUpVol{name: v.name, dir: a.dir, plugin: a.plugin, pod: a.pod, spec: a.spec, pv: a.pv, readOnly: a.readOnly})
		}
	}
	slices.SortFunc(out, func(a, b setUpVol) int { return strings.Compare(a.name, b.name) })
	return out
}

// boundClaim returns how a desired pod's claim volume was resolved, if it
// was and still names the same claim: a pod's claims are resolved once, so
// a running pod's volume is not torn down when its claim can no longer be
// read.
func (r *reconciler) boundClaim(uid types.UID, name, claim string) *boundVolume {
	p := r.pods[uid]
	if p == nil || p.desired == nil {
		return nil
	}
	for i := range p.desired.vols {
		dv := &p.desired.vols[i]
		if dv.spec.Name == name && dv.err == nil && dv.bound != nil && dv.bound.claim.Name == claim {
			return dv.bound
		}
	}
	return nil
}

// setUpElsewhere reports whether the persistent volume of a claim's
// volume is already set up (or half set up) for another pod: upstream
// verifies a persistent volume's attachment once for the node, not once
// per pod.
func (r *reconciler) setUpElsewhere(p *podState, dv *desiredVol) bool {
	if dv.bound == nil {
		return false
	}
	for _, o := range r.list {
		if o == p {
			continue
		}
		for _, v := range o.vols {
			if v.have != nil && v.have.plugin == dv.plugin && v.have.dir == dv.bound.pv.Name {
				return true
			}
		}
	}
	return false
}

// counts counts the desired volumes (of desired pods, with a plugin) and
// the usable ones by qualified plugin name.
func (r *reconciler) counts() (desired, actual map[string]int) {
	desired, actual = map[string]int{}, map[string]int{}
	for _, p := range r.list {
		if p.desired != nil {
			for i := range p.desired.vols {
				if dv := &p.desired.vols[i]; dv.err == nil && dv.plugin != nil {
					desired[dv.metric]++
				}
			}
		}
		for _, v := range p.vols {
			if v.have.usable() {
				actual[v.have.metric]++
			}
		}
	}
	return desired, actual
}
