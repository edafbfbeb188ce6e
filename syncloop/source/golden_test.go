package source_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden transcripts in testdata/ with the current output")

// TestGolden replays every transcript in testdata/ against a Merger. A
// transcript is a sequence of blocks separated by blank lines, each
//
//	command
//	----
//	expected output
//
// with lines starting with # as comments. Commands:
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
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata/")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) { runTranscript(t, file) })
	}
}

type block struct {
	pre  []string // comments and blank lines before the command
	line int
	cmd  string
	want string
}

func parseTranscript(t *testing.T, file string) ([]block, []string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []block
	var pre, out []string
	var cur *block
	inOut := false
	flush := func() {
		if cur != nil {
			cur.want = strings.Join(out, "\n")
			blocks = append(blocks, *cur)
		}
		cur, inOut, out = nil, false, nil
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && line == "":
			flush()
			pre = append(pre, line)
		case cur != nil && line == "----" && !inOut:
			inOut = true
		case cur != nil && inOut:
			out = append(out, line)
		case cur != nil:
			t.Fatalf("%s:%d: expected ---- after the command", file, n)
		case line == "" || strings.HasPrefix(line, "#"):
			pre = append(pre, line)
		default:
			cur = &block{pre: pre, line: n, cmd: line}
			pre = nil
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks, pre
}

func runTranscript(t *testing.T, file string) {
	blocks, trailer := parseTranscript(t, file)
	clk := testclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &eventtest.Recorder{}
	m := source.NewMerger(source.MergerOptions{Recorder: rec, Clock: clk})
	var rewritten strings.Builder
	for _, b := range blocks {
		got := runCommand(t, file, b, m, clk, rec)
		if *updateGolden {
			for _, p := range b.pre {
				rewritten.WriteString(p + "\n")
			}
			rewritten.WriteString(b.cmd + "\n----\n")
			if got != "" {
				rewritten.WriteString(got + "\n")
			}
			continue
		}
		if got != b.want {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", file, b.line, b.cmd, got, b.want)
		}
	}
	if *updateGolden {
		for _, p := range trailer {
			rewritten.WriteString(p + "\n")
		}
		if err := os.WriteFile(file, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runCommand(t *testing.T, file string, b block, m *source.Merger, clk *testclock.FakePassiveClock, rec *eventtest.Recorder) string {
	f := strings.Fields(b.cmd)
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
			t.Fatalf("%s:%d: unknown operation %q", file, b.line, f[1])
		}
		var ps []*v1.Pod
		for _, s := range f[2:] {
			ps = append(ps, parsePod(t, file, b.line, s))
		}
		for _, u := range m.Merge(f[0], syncloop.PodUpdate{Op: op, Pods: ps}) {
			out = append(out, describeOne(u))
		}
		for _, e := range rec.Events() {
			out = append(out, "event: "+e.String())
		}
		rec.TakeReasons()
	default:
		t.Fatalf("%s:%d: unknown command %q", file, b.line, b.cmd)
	}
	return strings.Join(out, "\n")
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
		p.Annotations[syncloop.ConfigSourceAnnotation], p.Spec.Containers[0].Image,
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
	ts, err := time.Parse(time.RFC3339Nano, p.Annotations[syncloop.ConfigSeenAnnotation])
	if err != nil {
		return "invalid"
	}
	return (ts.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))).String()
}
