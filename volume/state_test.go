package volume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stubPlugin is a Plugin that does nothing, for the core's tests.
type stubPlugin struct {
	name    string
	remount bool
}

func (p *stubPlugin) Name() string                                    { return p.name }
func (p *stubPlugin) CanSupport(*v1.Volume) bool                      { return true }
func (p *stubPlugin) SetUp(context.Context, *Volume) (Mounted, error) { return Mounted{}, nil }
func (p *stubPlugin) TearDown(context.Context, *Volume) error         { return nil }
func (p *stubPlugin) RequiresRemount(*v1.Volume) bool                 { return p.remount }

var (
	plainPlugin   = &stubPlugin{name: "test/plain"}
	remountPlugin = &stubPlugin{name: "test/content", remount: true}
)

func corePod(uid string, vols ...string) (*v1.Pod, []desiredVol) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}}
	var dvs []desiredVol
	for _, v := range vols {
		name, _, _ := strings.Cut(v, ":")
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: name})
	}
	for i, v := range vols {
		_, kind, _ := strings.Cut(v, ":")
		dv := desiredVol{spec: &pod.Spec.Volumes[i], plugin: plainPlugin}
		switch kind {
		case "content":
			dv.plugin, dv.remount = remountPlugin, true
		case "bad":
			dv.err = errors.New("bad volume")
		}
		dvs = append(dvs, dv)
	}
	return pod, dvs
}

func opStrings(ops []operation) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.String())
	}
	return out
}

// step plans, completes every op with err (nil: success) and returns the
// plan as strings.
func step(r *reconciler, now time.Time, ready bool, fail map[string]error) []string {
	ops := r.plan(now, ready, nil)
	for _, op := range ops {
		r.complete(op, Mounted{HostPath: "/" + op.name}, fail[op.String()], now)
	}
	return opStrings(ops)
}

func TestReconcilerPlan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type action func(r *reconciler)
	setPod := func(uid string, vols ...string) action {
		return func(r *reconciler) { p, dvs := corePod(uid, vols...); r.setPod(p, dvs) }
	}
	removePod := func(uid string) action { return func(r *reconciler) { r.removePod(types.UID(uid)) } }
	reconstructed := func(uid, name string) action {
		return func(r *reconciler) { r.addReconstructed(types.UID(uid), name, plainPlugin, plainPlugin.Name()) }
	}
	// active holds the pods the agent still runs (Options.ActivePod).
	active := map[types.UID]bool{}
	activate := func(uid string, on bool) action { return func(*reconciler) { active[types.UID(uid)] = on } }
	type stepT struct {
		do    []action
		at    time.Duration
		ready bool
		fail  map[string]error
		want  []string
	}
	for _, tc := range []struct {
		name  string
		steps []stepT
	}{
		{
			name: "set up once, then nothing",
			steps: []stepT{
				{do: []action{setPod("a", "x", "y")}, ready: true, want: []string{"SetUp a/x", "SetUp a/y"}},
				{ready: true, want: nil},
				{at: time.Hour, ready: true, want: nil},
			},
		},
		{
			name: "content volumes are refreshed every period",
			steps: []stepT{
				{do: []action{setPod("a", "x", "c:content")}, ready: true, want: []string{"SetUp a/c", "SetUp a/x"}},
				{at: 59 * time.Second, ready: true, want: nil},
				{at: 60 * time.Second, ready: true, want: []string{"SetUp a/c (remount)"}},
				{at: 61 * time.Second, ready: true, want: nil},
			},
		},
		{
			name: "removed pod: teardown first, then its directory",
			steps: []stepT{
				{do: []action{setPod("a", "x"), setPod("b", "y")}, ready: true, want: []string{"SetUp a/x", "SetUp b/y"}},
				{do: []action{removePod("a")}, ready: true, want: []string{"TearDown a/x"}},
				{ready: true, want: []string{"CleanPodDir a"}},
				{ready: true, want: nil},
			},
		},
		{
			name: "failures back off, doubling",
			steps: []stepT{
				{do: []action{setPod("a", "x")}, ready: true, fail: map[string]error{"SetUp a/x": errors.New("boom")}, want: []string{"SetUp a/x"}},
				{at: 499 * time.Millisecond, ready: true, want: nil},
				{at: 500 * time.Millisecond, ready: true, fail: map[string]error{"SetUp a/x": errors.New("boom")}, want: []string{"SetUp a/x"}},
				{at: 1499 * time.Millisecond, ready: true, want: nil},
				{at: 1500 * time.Millisecond, ready: true, want: []string{"SetUp a/x"}},
				{at: 10 * time.Second, ready: true, want: nil},
			},
		},
		{
			name: "a failed setup is torn down, without waiting for its backoff",
			steps: []stepT{
				{do: []action{setPod("a", "x")}, ready: true, fail: map[string]error{"SetUp a/x": errors.New("boom")}, want: []string{"SetUp a/x"}},
				{do: []action{removePod("a")}, ready: true, want: []string{"TearDown a/x"}},
				{ready: true, want: []string{"CleanPodDir a"}},
			},
		},
		{
			name: "a volume that cannot be processed is never planned",
			steps: []stepT{
				{do: []action{setPod("a", "x", "z:bad")}, ready: true, want: []string{"SetUp a/x"}},
				{ready: true, want: nil},
			},
		},
		{
			name: "volumes found on disk wait for the sources, then go",
			steps: []stepT{
				{do: []action{reconstructed("old", "x"), reconstructed("kept", "y")}, ready: false, want: nil},
				{do: []action{setPod("kept", "y")}, ready: false, want: []string{"SetUp kept/y"}},
				{ready: false, want: nil},
				{ready: true, want: []string{"TearDown old/x"}},
				{ready: true, want: []string{"CleanPodDir old"}},
			},
		},
		{
			name: "volumes found on disk of a pod the agent still runs wait for its worker, and are adopted",
			steps: []stepT{
				{do: []action{activate("kept", true), reconstructed("old", "x"), reconstructed("kept", "y")}, ready: true, want: []string{"TearDown old/x"}},
				{ready: true, want: []string{"CleanPodDir old"}},
				{at: time.Hour, ready: true, want: nil},
				{do: []action{setPod("kept", "y")}, ready: true, want: []string{"SetUp kept/y"}},
				{ready: true, want: nil},
			},
		},
		{
			name: "volumes found on disk of a pod the agent no longer runs go",
			steps: []stepT{
				{do: []action{activate("done", true), reconstructed("done", "x")}, ready: true, want: nil},
				{do: []action{activate("done", false)}, ready: true, want: []string{"TearDown done/x"}},
				{ready: true, want: []string{"CleanPodDir done"}},
			},
		},
		{
			name: "a label change refreshes content volumes only",
			steps: []stepT{
				{do: []action{setPod("a", "x", "c:content")}, ready: true, want: []string{"SetUp a/c", "SetUp a/x"}},
				{do: []action{func(r *reconciler) {
					p, dvs := corePod("a", "x", "c:content")
					p.Labels = map[string]string{"new": "label"}
					r.setPod(p, dvs)
				}}, ready: true, want: []string{"SetUp a/c (remount)"}},
				{ready: true, want: nil},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(active)
			r := newReconciler(time.Minute, func(uid types.UID) bool { return active[uid] })
			for i, s := range tc.steps {
				for _, do := range s.do {
					do(r)
				}
				got := step(r, t0.Add(s.at), s.ready, s.fail)
				assert.Equal(t, s.want, got, "step %d", i)
			}
		})
	}
}

func TestReconcilerInFlight(t *testing.T) {
	r := newReconciler(time.Minute, nil)
	p, dvs := corePod("a", "x")
	r.setPod(p, dvs)
	now := time.Now()
	ops := r.plan(now, true, nil)
	assert.Len(t, ops, 1)
	assert.Empty(t, r.plan(now, true, nil), "nothing planned twice while in flight")
	assert.Equal(t, []string{"x"}, r.mountState("a").unmounted)
	r.removePod("a")
	assert.Empty(t, r.plan(now, true, nil), "no teardown before the setup ended")
	assert.Equal(t, []string{"x"}, r.mountedVolumes("a"), "in flight counts as mounted")
	r.complete(ops[0], Mounted{}, nil, now)
	assert.Equal(t, []string{"TearDown a/x"}, opStrings(r.plan(now, true, nil)))
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 500 * time.Millisecond, 2: time.Second, 3: 2 * time.Second, 8: 64 * time.Second, 9: backoffMax, 100: backoffMax} {
		assert.Equal(t, want, backoff(n), fmt.Sprint(n))
	}
}

func TestReconcilerSetUpFailsAfterThePodWent(t *testing.T) {
	r := newReconciler(time.Minute, nil)
	p, dvs := corePod("a", "x")
	r.setPod(p, dvs)
	now := time.Now()
	ops := r.plan(now, true, nil)
	r.removePod("a")
	r.complete(ops[0], Mounted{}, errors.New("half done"), now)
	assert.Equal(t, []string{"TearDown a/x"}, opStrings(r.plan(now, true, nil)), "torn down at once, no backoff")
}
