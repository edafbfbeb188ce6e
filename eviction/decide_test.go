package eviction_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/internal/golden"
)

// TestDecide replays the transcripts in testdata/decide/ against a Machine
// driven directly: no manager, fake or clock, only the time the harness
// keeps. Commands:
//
//	machine hard=<flag> soft=<flag> grace=<flag> min=<flag> [maxgrace=N] [transition=D] [gc=containers,images|none]
//	pod <name> [options]     (parsePod)
//	use <name> [usage]       (parseUsage: the pod's stats)
//	node [changes]           (setNode)
//	step <duration> [stale]  (time passes; the node is measured again unless stale)
//	decide                   (one pass: Decide, prints the Decision)
//	reclaimed [changes]      (the node after the pass's reclaim, as node; prints what Reclaimed returns)
//	reclaimed unmeasured     (the node could not be measured again)
//	admit <name>             (Admit under the last Decision's conditions)
//	remove <name>            (the pod is no longer active)
//
// The node is the manager transcripts' (8Gi of memory, a 100Gi nodefs, a
// 100Gi imagefs that is not dedicated unless node says so, 32768 PIDs).
// By default the caller can collect dead containers and unused images.
func TestDecide(t *testing.T) {
	golden.RunDir(t, "testdata/decide", func(t *testing.T) func(golden.Case) []string {
		return lineHarness(t, newDecideHarness().run)
	})
}

// decideHarness is the state of one decide transcript.
type decideHarness struct {
	now  time.Time
	s    stats.Summary
	pods podList
	m    *eviction.Machine
	last eviction.Decision
}

func newDecideHarness() *decideHarness {
	n := healthyNode()
	n.at = t0
	return &decideHarness{now: t0, s: summary(n)}
}

func (h *decideHarness) rel(at time.Time) string { return "t=" + at.Sub(t0).String() }

func (h *decideHarness) run(t *testing.T, line string) string {
	f := strings.Fields(line)
	args := kv(f[1:])
	switch f[0] {
	case "machine":
		ts, err := eviction.ParseThresholds(args["hard"], args["soft"], args["grace"], args["min"])
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		o := eviction.MachineOptions{Thresholds: ts, ContainerGC: true, ImageGC: true}
		if v, ok := args["maxgrace"]; ok {
			o.MaxPodGracePeriodSeconds, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := args["transition"]; ok {
			if o.PressureTransitionPeriod, err = time.ParseDuration(v); err != nil {
				t.Fatal(err)
			}
		}
		if v, ok := args["gc"]; ok {
			o.ContainerGC, o.ImageGC = strings.Contains(v, "containers"), strings.Contains(v, "images")
		}
		if h.m, err = eviction.NewMachine(o); err != nil {
			return "error: " + err.Error() + "\n"
		}
		var b strings.Builder
		for _, th := range h.m.Thresholds() {
			fmt.Fprintln(&b, th.String())
		}
		return b.String()
	case "pod":
		h.pods = append(h.pods, parsePod(f[1], args))
		return ""
	case "remove":
		h.pods.remove(f[1])
		return ""
	case "use":
		setPodStats(&h.s, podStats(h.pods.get(f[1]), parseUsage(t, f[2:])))
		return ""
	case "node":
		setNode(t, &h.s, args)
		stampAll(h.now)(&h.s)
		return ""
	case "step":
		d, err := time.ParseDuration(f[1])
		if err != nil {
			t.Fatal(err)
		}
		h.now = h.now.Add(d)
		if _, stale := args["stale"]; !stale {
			stampAll(h.now)(&h.s)
		}
		return ""
	case "decide":
		h.last = h.m.Decide(eviction.NewInput(h.now, &h.s, h.pods))
		return h.printDecision(h.last)
	case "reclaimed":
		var after eviction.Observations
		if _, ok := args["unmeasured"]; !ok {
			setNode(t, &h.s, args)
			stampAll(h.now)(&h.s)
			after = eviction.Observe(&h.s)
		}
		evictions, relieved := h.m.Reclaimed(after)
		if relieved {
			return "relieved\n"
		}
		if len(evictions) == 0 {
			return "no pod to evict\n"
		}
		return printEvictions(evictions)
	case "admit":
		return printAdmission(eviction.Admit(h.last.Conditions, h.pods.get(f[1])))
	}
	t.Fatalf("unknown command %q", line)
	return ""
}

// printDecision prints a Decision one part a line, parts that are empty
// left out but the conditions.
func (h *decideHarness) printDecision(d eviction.Decision) string {
	var b strings.Builder
	for _, th := range d.Ignored {
		fmt.Fprintf(&b, "ignored: %s\n", th)
	}
	for _, th := range d.Derived {
		fmt.Fprintf(&b, "derived: %s\n", th)
	}
	fmt.Fprintf(&b, "conditions: %v\n", d.Conditions)
	for _, mt := range d.Met {
		fmt.Fprintf(&b, "met: %s since %s", mt.Threshold, h.rel(mt.Since))
		if mt.GraceOver {
			b.WriteString(", grace over")
		}
		b.WriteString("\n")
	}
	if len(d.Acting) > 0 {
		var acting []string
		for _, th := range d.Acting {
			acting = append(acting, th.String())
		}
		fmt.Fprintf(&b, "acting for %s: %s\n", d.Resource, strings.Join(acting, ", "))
	}
	if d.Reclaim.Any() {
		var what []string
		if d.Reclaim.Containers {
			what = append(what, "containers")
		}
		if d.Reclaim.Images {
			what = append(what, "images")
		}
		fmt.Fprintf(&b, "reclaim: %s\n", strings.Join(what, ", "))
	}
	b.WriteString(printEvictions(d.Evictions))
	return b.String()
}

func printEvictions(es []eviction.Eviction) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "evict %s signal=%s grace=%d", e.Pod.Name, e.Signal, e.GracePeriodSeconds)
		if e.Condition != nil {
			fmt.Fprintf(&b, " %s", e.Condition.Type)
		}
		fmt.Fprintf(&b, ": %s\n", strings.TrimSpace(e.Message))
	}
	return b.String()
}
