package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance summarize|compare ... (see go doc)")
		os.Exit(2)
	}
	var err error
	ok := true
	switch os.Args[1] {
	case "summarize":
		ok, err = summarizeCmd(os.Args[2:], os.Stdout)
	case "compare":
		err = compareCmd(os.Args[2:], os.Stdout)
	case "focus":
		err = focusCmd(os.Args[2:], os.Stdout)
	case "passed":
		err = passedCmd(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q (summarize, compare, focus or passed)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// suiteReport is the part of ginkgo's JSON report (types.Report) read here.
type suiteReport struct {
	SuiteDescription string
	SpecReports      []specReport
}

type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeType            string
	LeafNodeText            string
	State                   string
	RunTime                 time.Duration
	Failure                 struct {
		Message string
	}
}

// Spec is one spec's outcome in a run.
type Spec struct {
	Name    string // full text: containers and leaf, space-separated
	Area    string
	Outcome Outcome
	Failure string // first line of the failure message
	RunTime time.Duration
}

// Outcome is what became of a spec.
type Outcome string

// The outcomes; ginkgo's panicked, timed-out, interrupted and aborted specs
// count as failed, pending as skipped.
const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
)

var sigPrefix = regexp.MustCompile(`^\[sig-[a-z-]+\]\s*`)
var tag = regexp.MustCompile(`\s*\[[^\]]*\]`)

// area names the spec's outermost container, without its [sig-...] prefix
// and bracketed tags.
func area(containers []string, leaf string) string {
	a := leaf
	if len(containers) > 0 {
		a = containers[0]
	}
	a = sigPrefix.ReplaceAllString(a, "")
	a = strings.TrimSpace(tag.ReplaceAllString(a, ""))
	if a == "" {
		return "(unnamed)"
	}
	return a
}

// readReport returns the specs (It nodes) of a ginkgo JSON report that the
// run selected, sorted by name: a spec its focus or skip left out is not
// returned, a spec that skipped itself (a missing feature, say) is, with the
// reason. Setup nodes (BeforeSuite and the like) are left out, but when one of
// them failed its failure is returned as an error: the run then tells
// nothing about the specs.
func readReport(r io.Reader) ([]Spec, error) {
	var reports []suiteReport
	if err := json.NewDecoder(r).Decode(&reports); err != nil {
		return nil, fmt.Errorf("decoding the ginkgo report: %w", err)
	}
	var specs []Spec
	for _, sr := range reports {
		for _, s := range sr.SpecReports {
			if s.LeafNodeType != "It" {
				if outcome(s.State) == Failed {
					return nil, fmt.Errorf("%s failed: %s", s.LeafNodeType, firstLine(s.Failure.Message))
				}
				continue
			}
			if s.State == "skipped" && s.Failure.Message == "" {
				continue // filtered out by focus or skip: not part of this run
			}
			name := strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
			sp := Spec{Name: name, Area: area(s.ContainerHierarchyTexts, s.LeafNodeText), Outcome: outcome(s.State), RunTime: s.RunTime}
			if sp.Outcome != Passed {
				sp.Failure = firstLine(s.Failure.Message)
			}
			specs = append(specs, sp)
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs, nil
}

func outcome(state string) Outcome {
	switch state {
	case "passed":
		return Passed
	case "skipped", "pending":
		return Skipped
	default:
		return Failed
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const max = 300
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// Tally counts outcomes and the time the specs took.
type Tally struct {
	Passed, Failed, Skipped int
	RunTime                 time.Duration
}

// Ran is the number of specs that ran (passed or failed).
func (t Tally) Ran() int { return t.Passed + t.Failed }

func tallyByArea(specs []Spec) (map[string]*Tally, []string) {
	m := map[string]*Tally{}
	for _, s := range specs {
		t := m[s.Area]
		if t == nil {
			t = &Tally{}
			m[s.Area] = t
		}
		t.RunTime += s.RunTime
		switch s.Outcome {
		case Passed:
			t.Passed++
		case Failed:
			t.Failed++
		default:
			t.Skipped++
		}
	}
	areas := make([]string, 0, len(m))
	for a := range m {
		areas = append(areas, a)
	}
	sort.Strings(areas)
	return m, areas
}

func summarizeCmd(args []string, stdout io.Writer) (bool, error) {
	fs := flag.NewFlagSet("summarize", flag.ContinueOnError)
	report := fs.String("report", "", "ginkgo JSON report (comma-separated: the reports of one run's parts)")
	out := fs.String("out", "", "directory for passed.txt, failed.txt and summary.txt")
	passList := fs.String("pass-list", "", "recorded pass list to check for regressions")
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if *report == "" || *out == "" {
		return false, errors.New("summarize needs --report and --out")
	}
	specs, err := loadReports(*report)
	if err != nil {
		return false, err
	}
	var passed, failed strings.Builder
	for _, s := range specs {
		switch s.Outcome {
		case Passed:
			fmt.Fprintln(&passed, s.Name)
		case Failed:
			fmt.Fprintf(&failed, "%s\n\t%s\n", s.Name, s.Failure)
		}
	}
	var summary strings.Builder
	writeSummary(&summary, specs)
	for name, content := range map[string]string{"passed.txt": passed.String(), "failed.txt": failed.String(), "summary.txt": summary.String()} {
		if err := os.WriteFile(filepath.Join(*out, name), []byte(content), 0o644); err != nil {
			return false, err
		}
	}
	if *passList == "" {
		return true, nil
	}
	want, err := readLines(*passList)
	if err != nil {
		return false, err
	}
	regressions, added := checkPassList(want, specs)
	for _, n := range added {
		fmt.Fprintf(stdout, "new pass (not in %s): %s\n", filepath.Base(*passList), n)
	}
	for _, r := range regressions {
		fmt.Fprintf(stdout, "REGRESSION: %s\n", r)
	}
	fmt.Fprintf(stdout, "%d of the %d specs of %s passed; %d regressions, %d new passes\n",
		len(want)-len(regressions), len(want), *passList, len(regressions), len(added))
	return len(regressions) == 0, nil
}

// checkPassList returns the specs of want that did not pass (with why: failed,
// skipped or not run) and the passed specs that want lacks.
func checkPassList(want []string, specs []Spec) (regressions, added []string) {
	byName := make(map[string]Spec, len(specs))
	for _, s := range specs {
		byName[s.Name] = s
	}
	wanted := make(map[string]bool, len(want))
	for _, n := range want {
		wanted[n] = true
		s, ok := byName[n]
		switch {
		case !ok:
			regressions = append(regressions, n+" (not run)")
		case s.Outcome == Failed:
			regressions = append(regressions, n+" (failed: "+s.Failure+")")
		case s.Outcome == Skipped:
			regressions = append(regressions, n+" (skipped)")
		}
	}
	for _, s := range specs {
		if s.Outcome == Passed && !wanted[s.Name] {
			added = append(added, s.Name)
		}
	}
	return regressions, added
}

func writeSummary(w io.Writer, specs []Spec) {
	m, areas := tallyByArea(specs)
	var total Tally
	fmt.Fprintf(w, "%-60s %6s %6s %7s %8s\n", "area", "passed", "failed", "skipped", "time")
	for _, a := range areas {
		t := m[a]
		total.Passed += t.Passed
		total.Failed += t.Failed
		total.Skipped += t.Skipped
		total.RunTime += t.RunTime
		fmt.Fprintf(w, "%-60s %6d %6d %7d %8s\n", a, t.Passed, t.Failed, t.Skipped, t.RunTime.Round(time.Second))
	}
	fmt.Fprintf(w, "%-60s %6d %6d %7d %8s\n", "total", total.Passed, total.Failed, total.Skipped, total.RunTime.Round(time.Second))
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "\t") {
			continue
		}
		lines = append(lines, l)
	}
	return lines, sc.Err()
}

// run is one run of a suite to compare: its name in the table and its
// specs.
type run struct {
	name  string
	specs []Spec
}

// runFlag collects the repeated --run NAME=REPORTS flags of compare.
type runFlag []string

func (r *runFlag) String() string     { return strings.Join(*r, " ") }
func (r *runFlag) Set(v string) error { *r = append(*r, v); return nil }

func compareCmd(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	up := fs.String("upstream", "", "report dir of upstream kubelet's run (with report.json); the same as --run 'upstream kubelet=DIR'")
	mini := fs.String("minikubelet", "", "report dir of minikubelet's run; the same as --run minikubelet=DIR")
	var runs runFlag
	fs.Var(&runs, "run", "NAME=DIR[,DIR...]: a run and the report dirs (with report.json) of its parts; repeated, the first is the reference")
	md := fs.Bool("markdown", false, "print a markdown table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var named []string
	if *up != "" {
		named = append(named, "upstream kubelet="+*up)
	}
	if *mini != "" {
		named = append(named, "minikubelet="+*mini)
	}
	named = append(named, runs...)
	if len(named) < 2 {
		return errors.New("compare needs two runs or more: --upstream and --minikubelet, or --run NAME=DIR repeated")
	}
	loaded := make([]run, 0, len(named))
	for _, nv := range named {
		name, dirs, ok := strings.Cut(nv, "=")
		if !ok || name == "" || dirs == "" {
			return fmt.Errorf("--run %q: want NAME=DIR[,DIR...]", nv)
		}
		var reports []string
		for _, d := range strings.Split(dirs, ",") {
			reports = append(reports, filepath.Join(d, "report.json"))
		}
		specs, err := loadReports(strings.Join(reports, ","))
		if err != nil {
			return fmt.Errorf("run %s: %w", name, err)
		}
		loaded = append(loaded, run{name: name, specs: specs})
	}
	compare(w, loaded, *md)
	return nil
}

// loadReports reads the ginkgo JSON reports of a comma-separated list of
// paths, the parts of one run (a parallel and a serial part, say), and
// returns their specs together, sorted by name.
func loadReports(paths string) ([]Spec, error) {
	var all []Spec
	for _, p := range strings.Split(paths, ",") {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		specs, err := readReport(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		all = append(all, specs...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}

// compare prints, per area, how many specs each run passed and how many ran
// under any of them, then, for every run after the first, the specs the
// first passed and it did not.
func compare(w io.Writer, runs []run, markdown bool) {
	type row struct {
		passed []int
		total  int
	}
	rows := map[string]*row{}
	ran := map[string]bool{}
	byName := make([]map[string]Spec, len(runs))
	for i, r := range runs {
		byName[i] = map[string]Spec{}
		for _, s := range r.specs {
			byName[i][s.Name] = s
			rw := rows[s.Area]
			if rw == nil {
				rw = &row{passed: make([]int, len(runs))}
				rows[s.Area] = rw
			}
			if s.Outcome != Skipped && !ran[s.Name] {
				ran[s.Name] = true
				rw.total++
			}
			if s.Outcome == Passed {
				rw.passed[i]++
			}
		}
	}
	areas := make([]string, 0, len(rows))
	for a, rw := range rows {
		if rw.total > 0 {
			areas = append(areas, a)
		}
	}
	sort.Strings(areas)
	total := row{passed: make([]int, len(runs))}
	if markdown {
		fmt.Fprint(w, "| area |")
		for _, r := range runs {
			fmt.Fprintf(w, " %s passed |", r.name)
		}
		fmt.Fprintln(w, " ran |")
		fmt.Fprintln(w, "| --- |"+strings.Repeat(" ---: |", len(runs)+1))
	} else {
		fmt.Fprintf(w, "%-60s", "area")
		for _, r := range runs {
			fmt.Fprintf(w, " %*s", max(len(r.name), 8), r.name)
		}
		fmt.Fprintf(w, " %5s\n", "ran")
	}
	line := func(area string, rw *row, bold bool) {
		b := ""
		if bold {
			b = "**"
		}
		if markdown {
			fmt.Fprintf(w, "| %s%s%s |", b, area, b)
			for _, n := range rw.passed {
				fmt.Fprintf(w, " %s%d%s |", b, n, b)
			}
			fmt.Fprintf(w, " %s%d%s |\n", b, rw.total, b)
			return
		}
		fmt.Fprintf(w, "%-60s", area)
		for i, n := range rw.passed {
			fmt.Fprintf(w, " %*d", max(len(runs[i].name), 8), n)
		}
		fmt.Fprintf(w, " %5d\n", rw.total)
	}
	for _, a := range areas {
		rw := rows[a]
		for i, n := range rw.passed {
			total.passed[i] += n
		}
		total.total += rw.total
		line(a, rw, false)
	}
	line("all", &total, markdown)
	for i := 1; i < len(runs); i++ {
		var lost []string
		for _, s := range runs[0].specs {
			if s.Outcome == Passed && byName[i][s.Name].Outcome != Passed {
				lost = append(lost, s.Name)
			}
		}
		fmt.Fprintf(w, "\nPassed under %s, not under %s (%d):\n", runs[0].name, runs[i].name, len(lost))
		for _, n := range lost {
			why := "not run"
			if s, ok := byName[i][n]; ok {
				why = string(s.Outcome)
				if s.Failure != "" {
					why += ": " + s.Failure
				}
			}
			if markdown {
				fmt.Fprintf(w, "- %s — %s\n", n, why)
			} else {
				fmt.Fprintf(w, "  %s\n\t%s\n", n, why)
			}
		}
	}
}

func focusCmd(args []string, w io.Writer) error {
	if len(args) != 1 {
		return errors.New("focus takes one pass list")
	}
	names, err := readLines(args[0])
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("%s lists no spec", args[0])
	}
	fmt.Fprintln(w, focusRegexp(names))
	return nil
}

// focusRegexp is a ginkgo focus that selects the named specs: their full
// texts, quoted and anchored at their end. Not at their start: the text
// ginkgo matches a focus against does not begin with the spec's first
// container (a focus anchored with ^ selects nothing).
func focusRegexp(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "(?:" + strings.Join(quoted, "|") + ")$"
}

func passedCmd(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("passed", flag.ContinueOnError)
	report := fs.String("report", "", "ginkgo JSON report (comma-separated: the reports of one run's parts)")
	areasFile := fs.String("areas", "", `file of the areas to keep, one a line, each alone or as "AREA | N" or "AREA | all" (empty: every area)`)
	maxRun := fs.Duration("max-runtime", 0, "leave out the specs that took longer (0: keep all): how a subset is kept short")
	perArea := fs.Int("per-area", 0, `keep at most this many specs of each area, the fastest (0: all); an area's own "| N" overrides it`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *report == "" {
		return errors.New("passed needs --report")
	}
	if *perArea < 0 {
		return fmt.Errorf("--per-area %d: want 0 (all) or more", *perArea)
	}
	var areas map[string]int
	if *areasFile != "" {
		lines, err := readLines(*areasFile)
		if err != nil {
			return err
		}
		if areas, err = parseAreas(lines, *perArea); err != nil {
			return fmt.Errorf("%s: %w", *areasFile, err)
		}
	}
	specs, err := loadReports(*report)
	if err != nil {
		return err
	}
	if *maxRun > 0 {
		specs = slices.DeleteFunc(specs, func(s Spec) bool { return s.RunTime > *maxRun })
	}
	for _, n := range passedIn(specs, areas, *perArea) {
		fmt.Fprintln(w, n)
	}
	return nil
}

// parseAreas reads the lines of an areas file: an area's name, alone or
// followed by "| N" (keep at most N of its specs) or "| all". An area
// without a cap of its own takes perArea (0: all of its specs).
func parseAreas(lines []string, perArea int) (map[string]int, error) {
	areas := make(map[string]int, len(lines))
	for _, l := range lines {
		name, limit, capped := strings.Cut(l, "|")
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("line %q: no area name", l)
		}
		n := perArea
		if capped {
			limit = strings.TrimSpace(limit)
			if limit == "all" {
				n = 0
			} else if v, err := strconv.Atoi(limit); err == nil && v >= 1 {
				n = v
			} else {
				return nil, fmt.Errorf(`area %q: cap %q, want a number of specs (1 or more) or "all"`, name, limit)
			}
		}
		areas[name] = n
	}
	return areas, nil
}

// passedIn returns the passed specs of the given areas (every area when
// areas is nil), in the reports' order. An area's cap (its value in areas,
// or perArea when areas is nil; 0: none) keeps its fastest specs, ties
// broken by name, so that a list drawn from one run is the same each time.
func passedIn(specs []Spec, areas map[string]int, perArea int) []string {
	byArea := map[string][]Spec{}
	var kept []Spec
	for _, s := range specs {
		if _, listed := areas[s.Area]; s.Outcome != Passed || (areas != nil && !listed) {
			continue
		}
		kept = append(kept, s)
		byArea[s.Area] = append(byArea[s.Area], s)
	}
	keep := map[string]bool{}
	for area, ss := range byArea {
		n := perArea
		if areas != nil {
			n = areas[area]
		}
		if n > 0 && n < len(ss) {
			ss = slices.Clone(ss)
			slices.SortFunc(ss, func(a, b Spec) int {
				return cmp.Or(cmp.Compare(a.RunTime, b.RunTime), strings.Compare(a.Name, b.Name))
			})
			ss = ss[:n]
		}
		for _, s := range ss {
			keep[s.Name] = true
		}
	}
	var out []string
	for _, s := range kept {
		if keep[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}
