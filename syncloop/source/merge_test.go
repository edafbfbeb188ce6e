package source_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

type msg struct {
	source string
	op     syncloop.Operation
	pods   []*v1.Pod
}

func set(src string, ps ...*v1.Pod) msg { return msg{src, syncloop.OpSet, ps} }
func op(src string, o syncloop.Operation, ps ...*v1.Pod) msg {
	return msg{src, o, ps}
}

const (
	file = syncloop.SourceFile
	api  = syncloop.SourceAPI
	web  = syncloop.SourceHTTP
)

func TestMerge(t *testing.T) {
	cases := []struct {
		name   string
		before []msg
		msg    msg
		want   []string
		events []string
		held   []string // names held after, sorted
	}{
		{
			name: "first SET adds every pod in order",
			msg:  set(file, apiPod("b"), apiPod("a")),
			want: []string{"ADD file b,a"},
			held: []string{"a", "b"},
		},
		{
			name: "an empty first SET makes no update",
			msg:  set(file),
			want: []string{},
		},
		{
			name:   "the same SET again changes nothing",
			before: []msg{set(file, apiPod("a"), apiPod("b"))},
			msg:    set(file, apiPod("a"), apiPod("b")),
			want:   []string{},
			held:   []string{"a", "b"},
		},
		{
			name:   "SET diffs into REMOVE, ADD, UPDATE, DELETE and RECONCILE in upstream order",
			before: []msg{set(api, apiPod("keep"), apiPod("gone"), apiPod("upd"), apiPod("del"), apiPod("st"))},
			msg: set(api, apiPod("st", withPhase(v1.PodRunning)), apiPod("del", withDeletion(30)),
				apiPod("upd", withImage("busybox:1.37")), apiPod("new"), apiPod("keep")),
			want: []string{"REMOVE api gone", "ADD api new", "UPDATE api upd", "DELETE api del", "RECONCILE api st"},
			held: []string{"del", "keep", "new", "st", "upd"},
		},
		{
			name:   "a label change is an UPDATE",
			before: []msg{set(api, apiPod("a"))},
			msg:    set(api, apiPod("a", withLabel("app", "x"))),
			want:   []string{"UPDATE api a"},
		},
		{
			name:   "an annotation change is an UPDATE",
			before: []msg{set(api, apiPod("a"))},
			msg:    set(api, apiPod("a", withAnnotation("team", "x"))),
			want:   []string{"UPDATE api a"},
		},
		{
			name:   "the kubelet's own annotations are not compared",
			before: []msg{set(api, apiPod("a"))},
			msg: set(api, apiPod("a", withAnnotation(podspec.ConfigSeenAnnotation, "yesterday"),
				withAnnotation(podspec.ConfigSourceAnnotation, "elsewhere"), withAnnotation(podspec.ConfigMirrorAnnotation, "m"))),
			want: []string{},
		},
		{
			name:   "a shorter grace period of a deleted pod is a DELETE again",
			before: []msg{set(api, apiPod("a", withDeletion(30)))},
			msg:    set(api, apiPod("a", withDeletion(0))),
			want:   []string{"DELETE api a"},
		},
		{
			name:   "an equal quantity written differently is no change",
			before: []msg{set(api, apiPod("a", withCPU("1000m")))},
			msg:    set(api, apiPod("a", withCPU("1"))),
			want:   []string{},
		},
		{
			name:   "a spec change with a status change is one UPDATE, no RECONCILE",
			before: []msg{set(api, apiPod("a"))},
			msg:    set(api, apiPod("a", withImage("x:2"), withPhase(v1.PodRunning))),
			want:   []string{"UPDATE api a"},
		},
		{
			name:   "a new UID under the same name replaces the pod: REMOVE then ADD",
			before: []msg{set(file, apiPod("a"))},
			msg:    set(file, apiPod("a", withUID("uid-a2"))),
			want:   []string{"REMOVE file a", "ADD file a"},
			held:   []string{"a"},
		},
		{
			name:   "SET of one source leaves another's pods alone",
			before: []msg{set(file, apiPod("f")), set(api, apiPod("a"))},
			msg:    set(api),
			want:   []string{"REMOVE api a"},
			held:   []string{"f"},
		},
		{
			name:   "ADD of a new pod is an ADD",
			before: []msg{set(api, apiPod("a"))},
			msg:    op(api, syncloop.OpAdd, apiPod("b")),
			want:   []string{"ADD api b"},
			held:   []string{"a", "b"},
		},
		{
			name:   "ADD of a known changed pod is an UPDATE",
			before: []msg{set(api, apiPod("a"))},
			msg:    op(api, syncloop.OpAdd, apiPod("a", withImage("x:2"))),
			want:   []string{"UPDATE api a"},
		},
		{
			name: "UPDATE of an unknown pod is an ADD",
			msg:  op(api, syncloop.OpUpdate, apiPod("a")),
			want: []string{"ADD api a"},
			held: []string{"a"},
		},
		{
			name:   "UPDATE with a deletionTimestamp is a DELETE",
			before: []msg{op(api, syncloop.OpAdd, apiPod("a"))},
			msg:    op(api, syncloop.OpUpdate, apiPod("a", withDeletion(30))),
			want:   []string{"DELETE api a"},
		},
		{
			name:   "DELETE of a known pod is a DELETE, of an unchanged one nothing",
			before: []msg{op(api, syncloop.OpAdd, apiPod("a"), apiPod("b", withDeletion(30)))},
			msg:    op(api, syncloop.OpDelete, apiPod("a", withDeletion(30)), apiPod("b", withDeletion(30))),
			want:   []string{"DELETE api a"},
		},
		{
			name:   "UPDATE of only the status is a RECONCILE",
			before: []msg{op(api, syncloop.OpAdd, apiPod("a"))},
			msg:    op(api, syncloop.OpUpdate, apiPod("a", withPhase(v1.PodSucceeded))),
			want:   []string{"RECONCILE api a"},
		},
		{
			name:   "RECONCILE from a source is merged like an UPDATE",
			before: []msg{op(api, syncloop.OpAdd, apiPod("a"))},
			msg:    op(api, syncloop.OpReconcile, apiPod("a", withPhase(v1.PodRunning)), apiPod("b")),
			want:   []string{"ADD api b", "RECONCILE api a"},
		},
		{
			name:   "REMOVE forgets known pods and ignores unknown ones",
			before: []msg{set(api, apiPod("a"), apiPod("b"))},
			msg:    op(api, syncloop.OpRemove, apiPod("a"), apiPod("zzz")),
			want:   []string{"REMOVE api a"},
			held:   []string{"b"},
		},
		{
			name:   "REMOVE of another source's pod does nothing",
			before: []msg{set(file, apiPod("a"))},
			msg:    op(api, syncloop.OpRemove, apiPod("a")),
			want:   []string{},
			held:   []string{"a"},
		},
		{
			name:   "duplicate names in one message: the first wins, the other gets an event",
			msg:    set(file, apiPod("a"), apiPod("a", withUID("other"))),
			want:   []string{"ADD file a"},
			events: []string{`Warning FailedValidation Error validating pod a_default(other) from file due to duplicate pod name "a", ignoring`},
			held:   []string{"a"},
		},
		{
			name: "the same name in another namespace is another pod",
			msg:  set(file, apiPod("a"), apiPod("a", withUID("other"), withNamespace("kube-system"))),
			want: []string{"ADD file a,a"},
			held: []string{"a", "a"},
		},
		{
			name:   "a name another source holds is refused",
			before: []msg{set(file, apiPod("a"))},
			msg:    set(api, apiPod("a", withUID("api-a")), apiPod("b")),
			want:   []string{"ADD api b"},
			events: []string{`Warning FailedValidation Error validating pod a_default(api-a) from api due to duplicate pod name "a", held by pod uid-a from file, ignoring`},
			held:   []string{"a", "b"},
		},
		{
			name:   "a static pod's mirror pod from the API shares its name",
			before: []msg{set(file, apiPod("a"))},
			msg:    set(api, apiPod("a", withUID("mirror-a"), withAnnotation(podspec.ConfigMirrorAnnotation, "hash"))),
			want:   []string{"ADD api a"},
			held:   []string{"a", "a"},
		},
		{
			name:   "a mirror pod seen first does not take its static pod's name",
			before: []msg{set(api, apiPod("a", withUID("mirror-a"), withAnnotation(podspec.ConfigMirrorAnnotation, "hash")))},
			msg:    set(file, apiPod("a")),
			want:   []string{"ADD file a"},
			held:   []string{"a", "a"},
		},
		{
			name:   "a name freed in the same SET is free for the new UID",
			before: []msg{set(file, apiPod("a"))},
			msg:    set(file, apiPod("a", withUID("v2"))),
			want:   []string{"REMOVE file a", "ADD file a"},
		},
		{
			name: "a pod without UID or name is refused",
			msg:  set(api, apiPod("a", withUID("")), apiPod(""), apiPod("ok"), nil),
			want: []string{"ADD api ok"},
			events: []string{"Warning FailedValidation Error validating pod a_default() from api due to it has no UID, ignoring",
				"Warning FailedValidation Error validating pod _default(uid-) from api due to it has no name, ignoring"},
			held: []string{"ok"},
		},
		{
			name:   "an unknown operation changes nothing, and its pods get an event",
			msg:    op(api, syncloop.Operation(42), apiPod("a")),
			want:   []string{},
			events: []string{"Warning FailedValidation Error validating pod a_default(uid-a) from api due to unknown operation Operation(42), ignoring"},
		},
		{
			name: "a mirror pod from a source other than the API server is refused",
			msg: set("edge", apiPod("a", withAnnotation(podspec.ConfigMirrorAnnotation, "hash")), apiPod("b"),
				apiPod("c", withAnnotation(podspec.ConfigMirrorAnnotation, "hash"), withUID("mirror-c"))),
			want: []string{"ADD edge b"},
			events: []string{"Warning FailedValidation Error validating pod a_default(uid-a) from edge due to it is a mirror pod (annotation kubernetes.io/config.mirror), which only the API server sends, ignoring",
				"Warning FailedValidation Error validating pod c_default(mirror-c) from edge due to it is a mirror pod (annotation kubernetes.io/config.mirror), which only the API server sends, ignoring"},
			held: []string{"b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &eventtest.Recorder{}
			m := source.NewMerger(source.MergerOptions{Recorder: rec})
			for _, b := range tc.before {
				m.Merge(b.source, syncloop.PodUpdate{Op: b.op, Pods: b.pods})
			}
			rec.TakeReasons()
			got := m.Merge(tc.msg.source, syncloop.PodUpdate{Op: tc.msg.op, Source: "ignored", Pods: tc.msg.pods})
			assert.Equal(t, tc.want, describe(got))
			assert.Equal(t, tc.events, rec.Strings())
			if tc.held != nil {
				var held []string
				for _, p := range m.Pods() {
					held = append(held, p.Name)
				}
				assert.Equal(t, tc.held, held)
			}
		})
	}
}

func withCPU(q string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}
	}
}

func TestMergeAnnotations(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Date(2026, 3, 1, 12, 0, 0, 5, time.UTC))
	m := source.NewMerger(source.MergerOptions{Clock: clk})
	in := apiPod("a", withAnnotation("team", "x"))
	got := m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(in)})
	require.Len(t, got, 1)
	added := got[0].Pods[0]
	assert.Equal(t, map[string]string{
		"team":                         "x",
		podspec.ConfigSourceAnnotation: "api",
		podspec.ConfigSeenAnnotation:   "2026-03-01T12:00:00.000000005Z",
	}, added.Annotations)
	assert.Equal(t, map[string]string{"team": "x"}, in.Annotations, "the incoming pod is not modified")
	assert.NotSame(t, in, added)

	clk.SetTime(clk.Now().Add(time.Hour))
	got = m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("a", withAnnotation("team", "y")))})
	require.Equal(t, []string{"UPDATE api a"}, describe(got))
	updated := got[0].Pods[0]
	assert.Equal(t, "2026-03-01T12:00:00.000000005Z", updated.Annotations[podspec.ConfigSeenAnnotation], "config.seen is kept")
	assert.Equal(t, "api", updated.Annotations[podspec.ConfigSourceAnnotation])
	assert.Equal(t, "y", updated.Annotations["team"])
	assert.Equal(t, "x", added.Annotations["team"], "a pod once returned never changes")
	assert.NotSame(t, added, updated)

	got = m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("a", withAnnotation("team", "y"), withPhase(v1.PodRunning)))})
	require.Equal(t, []string{"RECONCILE api a"}, describe(got))
	assert.Equal(t, v1.PodRunning, got[0].Pods[0].Status.Phase)
	assert.Equal(t, v1.PodPhase(""), updated.Status.Phase, "a pod once returned never changes")
}

func TestMergeKeepsFirstSeenMetadata(t *testing.T) {
	m := source.NewMerger(source.MergerOptions{})
	first := apiPod("a")
	first.ResourceVersion = "1"
	m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: pods(first)})
	second := apiPod("a", withImage("x:2"))
	second.ResourceVersion, second.Generation = "2", 2
	got := m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpUpdate, Pods: pods(second)})
	require.Equal(t, []string{"UPDATE api a"}, describe(got))
	assert.Equal(t, "x:2", got[0].Pods[0].Spec.Containers[0].Image)
	assert.Equal(t, "1", got[0].Pods[0].ResourceVersion, "as upstream, only spec, generation, labels, annotations, deletion and status are taken")
	assert.Equal(t, int64(2), got[0].Pods[0].Generation, "the status's observedGeneration follows the spec's")
}

func TestMergeRefusedPodIsReportedOnceAndReconsidered(t *testing.T) {
	rec := &eventtest.Recorder{}
	m := source.NewMerger(source.MergerOptions{Recorder: rec})
	m.Merge(file, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("a"))})
	clash := apiPod("a", withUID("api-a"))
	for range 3 {
		assert.Empty(t, m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(clash)}))
	}
	assert.Equal(t, []string{source.ReasonFailedValidation}, rec.TakeReasons(), "reported once while it keeps coming")

	m.Merge(file, syncloop.PodUpdate{Op: syncloop.OpSet})
	got := m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(clash)})
	assert.Equal(t, []string{"ADD api a"}, describe(got), "the name is free now")
	assert.Empty(t, rec.TakeReasons())
	assert.True(t, m.Seen(api))
	assert.False(t, m.Seen(web))
}

func TestEventRecorderFunc(t *testing.T) {
	var got []string
	rec := source.EventRecorderFunc(func(_ runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
		got = append(got, eventtype+" "+reason+" "+fmt.Sprintf(messageFmt, args...))
	})
	m := source.NewMerger(source.MergerOptions{Recorder: rec})
	m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: pods(apiPod("a"), apiPod("a", withUID("b")))})
	assert.Equal(t, []string{`Warning FailedValidation Error validating pod a_default(b) from api due to duplicate pod name "a", ignoring`}, got)
	m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpRemove, Pods: pods(nil, apiPod("a"))})
	assert.Empty(t, m.Pods())
}

func TestMergeSamePointerIsUnchanged(t *testing.T) {
	m := source.NewMerger(source.MergerOptions{})
	p := apiPod("a")
	m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(p)})
	assert.Empty(t, m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(p)}))
	changed := apiPod("a", withImage("x:2"))
	assert.Equal(t, []string{"UPDATE api a"}, describe(m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(changed)})))
	assert.Equal(t, []string{"UPDATE api a"}, describe(m.Merge(api, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(p)})),
		"the first pointer again, after another: compared, and changed back")
}
