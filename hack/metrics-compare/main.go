package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func main() {
	fs := flag.NewFlagSet("metrics-compare", flag.ContinueOnError)
	required := fs.String("required", "", "file of required family names, one per line (# comments)")
	report := fs.String("report", "", "also write the report to this file")
	knownFile := fs.String("known", "", "file of family names whose differences are known (recorded), one per line: reported, not failing")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: metrics-compare [-required FILE] [-report FILE] UPSTREAM_DIR OURS_DIR")
		os.Exit(2)
	}
	var req map[string]bool
	if *required != "" {
		var err error
		if req, err = readRequired(*required); err != nil {
			fmt.Fprintln(os.Stderr, "metrics-compare:", err)
			os.Exit(2)
		}
	}
	var known map[string]bool
	if *knownFile != "" {
		var err error
		if known, err = readRequired(*knownFile); err != nil {
			fmt.Fprintln(os.Stderr, "metrics-compare:", err)
			os.Exit(2)
		}
	}
	res, err := compareDirs(fs.Arg(0), fs.Arg(1), req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "metrics-compare:", err)
		os.Exit(2)
	}
	res.markKnown(known)
	var out strings.Builder
	res.write(&out)
	fmt.Print(out.String())
	if *report != "" {
		if err := os.WriteFile(*report, []byte(out.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "metrics-compare:", err)
			os.Exit(2)
		}
	}
	if res.failed() {
		os.Exit(1)
	}
}

// readRequired reads a list of family names (the required list, or the
// known list), one per line; blank lines and text after # are ignored.
func readRequired(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	req := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !model.IsValidLegacyMetricName(line) {
			return nil, fmt.Errorf("%s:%d: %q is not a metric name", path, n, line)
		}
		req[line] = true
	}
	return req, sc.Err()
}

// Verdicts of one family.
const (
	Same        = "same"
	HelpDiffers = "help differs"
	Missing     = "missing"
	Differs     = "differs"
	OursOnly    = "ours only"
)

// Row is one family's comparison.
type Row struct {
	Name     string
	Verdict  string
	Required bool
	// Detail says what differs: type, labels, buckets, help.
	Detail string
	// Known says the difference is on the known list: reported, not
	// failing.
	Known bool
}

// Failing says whether the row fails the comparison.
func (r Row) Failing() bool {
	return !r.Known && r.differs()
}

func (r Row) differs() bool {
	return r.Verdict == Differs || (r.Verdict == Missing && r.Required)
}

// Endpoint is the comparison of one endpoint's scrapes.
type Endpoint struct {
	File string
	Rows []Row
	// Lint holds the lint problems of ours that upstream's same family
	// does not have.
	Lint []promlint.Problem
}

// Result is the comparison of every endpoint.
type Result struct {
	Endpoints []Endpoint
	// Fixed are the names of the known list that no longer differ: the
	// list should lose them.
	Fixed []string
}

// markKnown marks the failing rows whose family is on the known list, and
// records the known families that no longer differ.
func (r *Result) markKnown(known map[string]bool) {
	still := map[string]bool{}
	for i := range r.Endpoints {
		for j := range r.Endpoints[i].Rows {
			row := &r.Endpoints[i].Rows[j]
			if row.differs() && known[row.Name] {
				row.Known, still[row.Name] = true, true
			}
		}
	}
	for _, name := range sortedKeys(known) {
		if !still[name] {
			r.Fixed = append(r.Fixed, name)
		}
	}
}

func (r Result) failed() bool {
	for _, e := range r.Endpoints {
		if len(e.Lint) > 0 {
			return true
		}
		for _, row := range e.Rows {
			if row.Failing() {
				return true
			}
		}
	}
	return false
}

// compareDirs compares every scrape of upDir with ours of the same name.
func compareDirs(upDir, oursDir string, required map[string]bool) (Result, error) {
	files, err := filepath.Glob(filepath.Join(upDir, "*.txt"))
	if err != nil {
		return Result{}, err
	}
	if len(files) == 0 {
		return Result{}, fmt.Errorf("no scrape (*.txt) in %s", upDir)
	}
	slices.Sort(files)
	var res Result
	for _, f := range files {
		name := filepath.Base(f)
		up, err := parseFile(f)
		if err != nil {
			return Result{}, err
		}
		ours, err := parseFile(filepath.Join(oursDir, name))
		if err != nil {
			return Result{}, err
		}
		e, err := compare(up, ours, required)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		e.File = name
		res.Endpoints = append(res.Endpoints, e)
	}
	return res, nil
}

func parseFile(path string) (map[string]*dto.MetricFamily, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mfs, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return mfs, nil
}

// parse reads a text exposition.
func parse(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(r)
}

// compare compares one endpoint's families, upstream's first, then ours
// that upstream does not serve, and lints ours.
func compare(up, ours map[string]*dto.MetricFamily, required map[string]bool) (Endpoint, error) {
	var e Endpoint
	for _, name := range sortedKeys(up) {
		u := up[name]
		row := Row{Name: name, Required: required[name]}
		o, ok := ours[name]
		if !ok {
			row.Verdict = Missing
			e.Rows = append(e.Rows, row)
			continue
		}
		var diffs []string
		if u.GetType() != o.GetType() {
			diffs = append(diffs, fmt.Sprintf("type %s, ours %s", typeName(u), typeName(o)))
		}
		ul, ol := labelNames(u), labelNames(o)
		if !slices.Equal(ul, ol) && len(u.GetMetric()) > 0 && len(o.GetMetric()) > 0 {
			diffs = append(diffs, fmt.Sprintf("labels {%s}, ours {%s}", strings.Join(ul, ","), strings.Join(ol, ",")))
		}
		if u.GetType() == dto.MetricType_HISTOGRAM && o.GetType() == dto.MetricType_HISTOGRAM {
			ub, ob := buckets(u), buckets(o)
			if len(ub) > 0 && len(ob) > 0 && !slices.Equal(ub, ob) {
				diffs = append(diffs, fmt.Sprintf("buckets %s, ours %s", formatBuckets(ub), formatBuckets(ob)))
			}
		}
		switch {
		case len(diffs) > 0:
			row.Verdict, row.Detail = Differs, strings.Join(diffs, "; ")
		case u.GetHelp() != o.GetHelp():
			row.Verdict, row.Detail = HelpDiffers, fmt.Sprintf("%q, ours %q", u.GetHelp(), o.GetHelp())
		default:
			row.Verdict = Same
		}
		e.Rows = append(e.Rows, row)
	}
	for _, name := range sortedKeys(ours) {
		if _, ok := up[name]; !ok {
			e.Rows = append(e.Rows, Row{Name: name, Verdict: OursOnly})
		}
	}
	upProblems, err := lint(up)
	if err != nil {
		return Endpoint{}, err
	}
	ourProblems, err := lint(ours)
	if err != nil {
		return Endpoint{}, err
	}
	for _, p := range ourProblems {
		if !slices.Contains(upProblems, p) {
			e.Lint = append(e.Lint, p)
		}
	}
	return e, nil
}

func lint(mfs map[string]*dto.MetricFamily) ([]promlint.Problem, error) {
	list := make([]*dto.MetricFamily, 0, len(mfs))
	for _, name := range sortedKeys(mfs) {
		list = append(list, mfs[name])
	}
	return promlint.NewWithMetricFamilies(list).Lint()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func typeName(mf *dto.MetricFamily) string { return strings.ToLower(mf.GetType().String()) }

// labelNames are the label names of a family's samples, sorted, without a
// histogram's le and a summary's quantile.
func labelNames(mf *dto.MetricFamily) []string {
	var names []string
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(names, l.GetName()) {
				names = append(names, l.GetName())
			}
		}
	}
	slices.Sort(names)
	return names
}

// buckets are the upper bounds of the first sample of a histogram.
func buckets(mf *dto.MetricFamily) []float64 {
	for _, m := range mf.GetMetric() {
		var b []float64
		for _, bucket := range m.GetHistogram().GetBucket() {
			b = append(b, bucket.GetUpperBound())
		}
		return b
	}
	return nil
}

func formatBuckets(b []float64) string {
	if len(b) <= 4 {
		return fmt.Sprint(b)
	}
	return fmt.Sprintf("[%g %g … %g] (%d)", b[0], b[1], b[len(b)-1], len(b))
}

// write prints the report: a summary line, then a table per endpoint.
func (r Result) write(w io.Writer) {
	var families, same, help, missing, missingReq, differs, oursOnly, problems, known int
	for _, e := range r.Endpoints {
		problems += len(e.Lint)
		for _, row := range e.Rows {
			if row.Known {
				known++
			}
			switch row.Verdict {
			case Same:
				same++
			case HelpDiffers:
				help++
			case Missing:
				missing++
				if row.Required {
					missingReq++
				}
			case Differs:
				differs++
			case OursOnly:
				oursOnly++
				continue
			}
			families++
		}
	}
	verdict := "ok"
	if r.failed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "metrics-compare: %s: upstream serves %d families: %d the same, %d with another help text, %d differ, %d missing (%d required); %d ours only; %d lint problems of ours; %d differences known\n",
		verdict, families, same, help, differs, missing, missingReq, oursOnly, problems, known)
	if len(r.Fixed) > 0 {
		fmt.Fprintf(w, "no longer differing, to take off the known list: %s\n", strings.Join(r.Fixed, " "))
	}
	fmt.Fprintln(w)
	for _, e := range r.Endpoints {
		fmt.Fprintf(w, "## %s\n\n| family | verdict | detail |\n|---|---|---|\n", e.File)
		for _, row := range e.Rows {
			v := row.Verdict
			if row.Required {
				v += " (required)"
			}
			if row.Known {
				v += " (known)"
			}
			if row.Failing() {
				v = "**" + v + "**"
			}
			fmt.Fprintf(w, "| `%s` | %s | %s |\n", row.Name, v, strings.ReplaceAll(row.Detail, "|", `\|`))
		}
		for _, p := range e.Lint {
			fmt.Fprintf(w, "\nlint: `%s`: %s", p.Metric, p.Text)
		}
		fmt.Fprintln(w)
	}
}
