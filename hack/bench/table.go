package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// measure is one row of the table: a value of a result and its goal.
type measure struct {
	name string
	// value reads the row's figure from a result.
	value func(r *Result) float64
	// format prints the figure.
	format func(v float64) string
	// limit, when not zero, is the most the second agent's figure may be on
	// the runtimes of limitOn (all runtimes when empty), beside a ratio of
	// at most 1.0.
	limit   float64
	limitOn string
	// info marks a row with no goal, printed to explain the others.
	info bool
}

func secs(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func mibs(v float64) string { return fmt.Sprintf("%.1f", v) }

// measures are the rows, in the order printed.
var measures = []measure{
	{name: "/pods first answers (s)", value: func(r *Result) float64 { return r.FirstAnswer }, format: secs, info: true},
	{name: "first pod Running (s)", value: func(r *Result) float64 { return r.FirstRunning }, format: secs, limit: 0.3, limitOn: "fakecri"},
	{name: "all pods Running (s)", value: func(r *Result) float64 { return r.AllRunning }, format: secs},
	{name: "start-up CPU (s)", value: func(r *Result) float64 { return r.StartupCPU }, format: secs},
	{name: "start-up peak RSS (MiB)", value: func(r *Result) float64 { return r.StartupPeakRSS }, format: mibs},
	{name: "steady CPU (s)", value: func(r *Result) float64 { return r.SteadyCPU }, format: secs},
	{name: "steady RSS (MiB)", value: func(r *Result) float64 { return r.SteadyRSS }, format: mibs},
	{name: "one more pod Ready (s)", value: func(r *Result) float64 { return r.ExtraReady }, format: secs, limit: 0.5, limitOn: "containerd"},
	{name: "delete: /pods empty (s)", value: func(r *Result) float64 { return r.DeletePods }, format: secs},
	{name: "delete: no container runs (s)", value: func(r *Result) float64 { return r.DeleteContainers }, format: secs},
}

func table(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	base := fs.String("base", "upstream", "the agent the others are compared with")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var results []*Result
	for _, path := range fs.Args() {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("table: %w", err)
		}
		r := new(Result)
		if err := json.Unmarshal(data, r); err != nil {
			return fmt.Errorf("table: %s: %w", path, err)
		}
		results = append(results, r)
	}
	if len(results) == 0 {
		return errors.New("table: no results")
	}
	return writeTables(w, *base, results)
}

// runtimeOrder puts the fake runtime's tables before containerd's.
func runtimeOrder(rt string) int {
	if rt == "fakecri" {
		return 0
	}
	return 1
}

// writeTables prints a table per runtime and pod count: each measure under
// base and under the other agent, the ratio of the other to base, the goal
// and whether it is met.
func writeTables(w io.Writer, base string, results []*Result) error {
	type key struct {
		runtime string
		pods    int
	}
	groups := map[key][]*Result{}
	var keys []key
	for _, r := range results {
		k := key{r.Runtime, r.Pods}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(runtimeOrder(a.runtime), runtimeOrder(b.runtime)), cmp.Compare(a.runtime, b.runtime), cmp.Compare(a.pods, b.pods))
	})
	for i, k := range keys {
		var b, o *Result
		for _, r := range groups[k] {
			switch {
			case r.Agent == base && b == nil:
				b = r
			case r.Agent != base && o == nil:
				o = r
			default:
				return fmt.Errorf("table: %s, %d pods: more than one result of %s, or more than two agents", k.runtime, k.pods, r.Agent)
			}
		}
		if b == nil || o == nil {
			return fmt.Errorf("table: %s, %d pods: want a result of %s and of one other agent", k.runtime, k.pods, base)
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeTable(w, k.runtime, k.pods, b, o)
	}
	return nil
}

func writeTable(w io.Writer, runtime string, pods int, b, o *Result) {
	fmt.Fprintf(w, "%s, %d pods (steady state %.0f s):\n\n", runtime, pods, o.SteadySeconds)
	fmt.Fprintf(w, "| measure | %s | %s | ratio | goal | met |\n|---|--:|--:|--:|---|---|\n", b.Agent, o.Agent)
	for _, m := range measures {
		bv, ov := m.value(b), m.value(o)
		ratio := "–"
		if bv > 0 {
			ratio = fmt.Sprintf("%.2f", ov/bv)
		}
		goal, met := "", ""
		if !m.info {
			goal = "ratio ≤ 1.0"
			ok := bv > 0 && ov/bv <= 1.0 || bv == 0 && ov == 0
			if m.limit > 0 && (m.limitOn == "" || m.limitOn == runtime) {
				goal += fmt.Sprintf(", ≤ %s s", strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", m.limit), "0"), "."))
				ok = ok && ov <= m.limit
			}
			met = "no"
			if ok {
				met = "yes"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", m.name, m.format(bv), m.format(ov), ratio, goal, met)
	}
	fmt.Fprintf(w, "\nEach time is late by at most %.0f ms (%s) and %.0f ms (%s): the widest gap between two samples.\n",
		1000*b.Resolution, b.Agent, 1000*o.Resolution, o.Agent)
	fmt.Fprintf(w, "Load average (1 min) at the start and the end: %.2f–%.2f (%s), %.2f–%.2f (%s).\n",
		b.LoadStart, b.LoadEnd, b.Agent, o.LoadStart, o.LoadEnd, o.Agent)
}
