package source_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/internal/golden"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// TestGolden replays every transcript in testdata/ (see package
// internal/golden for the format) against a Merger. Commands:
//
//	<source> <op> [pod...]   merge a message; op is set, add, update, delete,
//	                         remove or reconcile; prints each update as
//	                         "<OP> <source> <pod>,<pod>" and each event
//	pods                     prints every held pod: namespace/name uid
//	                         source image phase [deleted] [labels]
//	tick                     moves the clock on by one second
//
// A pod is written name[@uid][+key=value...] with keys ns, img, phase, del
// (a deletion grace period in seconds), label and ann (k=v each); the UID
// defaults to "uid-<name>" ("name@" has none). Run with -update to rewrite the expected output.
func TestGolden(t *testing.T) {
	golden.Run(t, func(t *testing.T) func(golden.Case) []string {
		clk := testclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		rec := &eventtest.Recorder{}
		m := source.NewMerger(source.MergerOptions{Recorder: rec, Clock: clk})
		return func(c golden.Case) []string {
			if len(c.Input) > 0 {
				t.Fatalf("%s:%d: %s takes no input lines", c.File, c.Line, c.Command)
			}
			return runCommand(t, c, m, clk, rec)
		}
	})
}

func runCommand(t *testing.T, b golden.Case, m *source.Merger, clk *testclock.FakePassiveClock, rec *eventtest.Recorder) []string {
	file := b.File
	f := strings.Fields(b.Command)
	var out []string
	switch {
	case f[0] == "tick":
		clk.SetTime(clk.Now().Add(time.Second))
	case f[0] == "pods":
		for _, p := range m.Pods() {
			out = append(out, describePod(p))
		}
	case len(f) >= 2:
		ops := map[string]syncloop.Operation{"set": syncloop.OpSet, "add": syncloop.OpAdd, "update": syncloop.OpUpdate,
			"delete": syncloop.OpDelete, "remove": syncloop.OpRemove, "reconcile": syncloop.OpReconcile}
		op, ok := ops[f[1]]
		if !ok {
			t.Fatalf("%s:%d: unknown operation %q", file, b.Line, f[1])
		}
		var ps []*v1.Pod
		for _, s := range f[2:] {
			ps = append(ps, parsePod(t, file, b.Line, s))
		}
		for _, u := range m.Merge(f[0], syncloop.PodUpdate{Op: op, Pods: ps}) {
			out = append(out, describeOne(u))
		}
		for _, e := range rec.Events() {
			out = append(out, "event: "+e.String())
		}
		rec.TakeReasons()
	default:
		t.Fatalf("%s:%d: unknown command %q", file, b.Line, b.Command)
	}
	return out
}

func parsePod(t *testing.T, file string, line int, s string) *v1.Pod {
	parts := strings.Split(s, "+")
	name, uid, hasUID := strings.Cut(parts[0], "@")
	if !hasUID {
		uid = "uid-" + name
	}
	p := apiPod(name, withUID(uid))
	for _, kv := range parts[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "ns":
			p.Namespace = v
		case "img":
			p.Spec.Containers[0].Image = v
		case "phase":
			p.Status.Phase = v1.PodPhase(v)
		case "del":
			g, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s:%d: del=%q: %v", file, line, v, err)
			}
			withDeletion(g)(p)
		case "label":
			lk, lv, _ := strings.Cut(v, "=")
			withLabel(lk, lv)(p)
		case "ann":
			ak, av, _ := strings.Cut(v, "=")
			withAnnotation(ak, av)(p)
		default:
			t.Fatalf("%s:%d: unknown pod attribute %q", file, line, k)
		}
	}
	return p
}

func describePod(p *v1.Pod) string {
	s := fmt.Sprintf("%s/%s %s %s %s seen=%s phase=%s", p.Namespace, p.Name, p.UID,
		p.Annotations[podspec.ConfigSourceAnnotation], p.Spec.Containers[0].Image,
		seenAt(p), p.Status.Phase)
	if p.DeletionTimestamp != nil {
		s += fmt.Sprintf(" deleted grace=%d", *p.DeletionGracePeriodSeconds)
	}
	if len(p.Labels) > 0 {
		s += fmt.Sprintf(" labels=%v", p.Labels)
	}
	return s
}

// seenAt prints the config.seen annotation as seconds after the start.
func seenAt(p *v1.Pod) string {
	ts, err := time.Parse(time.RFC3339Nano, p.Annotations[podspec.ConfigSeenAnnotation])
	if err != nil {
		return "invalid"
	}
	return (ts.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))).String()
}
