package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// report is a ginkgo JSON report in the shape e2e_node.test writes: a setup
// node, a passed, a failed and a timed-out spec, one that skipped itself,
// and one the focus left out.
const report = `[{"SuiteDescription": "E2eNode Suite", "SpecReports": [
 {"LeafNodeType": "SynchronizedBeforeSuite", "State": "passed"},
 {"ContainerHierarchyTexts": ["[sig-node] Probing container"], "LeafNodeType": "It",
  "LeafNodeText": "should be restarted with a exec liveness probe [NodeConformance] [Conformance]", "State": "passed", "RunTime": 61000000000},
 {"ContainerHierarchyTexts": ["[sig-node] ContainerLogPath [NodeConformance]", "Pod with a container"], "LeafNodeType": "It",
  "LeafNodeText": "should print log to correct log path", "State": "failed", "RunTime": 300000000000,
  "Failure": {"Message": "Timed out after 300s.\nExpected success"}},
 {"ContainerHierarchyTexts": ["[sig-storage] Downward API volume"], "LeafNodeType": "It",
  "LeafNodeText": "should provide podname only [NodeConformance]", "State": "timedout", "RunTime": 1000000000,
  "Failure": {"Message": "context deadline exceeded"}},
 {"ContainerHierarchyTexts": ["[sig-node] Pods"], "LeafNodeType": "It",
  "LeafNodeText": "should support swap [NodeConformance]", "State": "skipped", "Failure": {"Message": "swap is off"}},
 {"ContainerHierarchyTexts": ["[sig-node] Pods"], "LeafNodeType": "It",
  "LeafNodeText": "should be evicted [Serial]", "State": "skipped"}
]}]`

const (
	probe   = "[sig-node] Probing container should be restarted with a exec liveness probe [NodeConformance] [Conformance]"
	logPath = "[sig-node] ContainerLogPath [NodeConformance] Pod with a container should print log to correct log path"
	podname = "[sig-storage] Downward API volume should provide podname only [NodeConformance]"
	swap    = "[sig-node] Pods should support swap [NodeConformance]"
)

func TestReadReport(t *testing.T) {
	specs, err := readReport(strings.NewReader(report))
	require.NoError(t, err)
	want := []Spec{
		{Name: logPath, Area: "ContainerLogPath", Outcome: Failed, Failure: "Timed out after 300s.", RunTime: 300 * time.Second},
		{Name: swap, Area: "Pods", Outcome: Skipped, Failure: "swap is off"},
		{Name: probe, Area: "Probing container", Outcome: Passed, RunTime: 61 * time.Second},
		{Name: podname, Area: "Downward API volume", Outcome: Failed, Failure: "context deadline exceeded", RunTime: time.Second},
	}
	assert.Equal(t, want, specs, "sorted by name; the spec the focus left out and the setup node are not specs of the run")
}

func TestReadReportSetupFailure(t *testing.T) {
	_, err := readReport(strings.NewReader(`[{"SpecReports": [{"LeafNodeType": "SynchronizedBeforeSuite", "State": "failed",
		"Failure": {"Message": "node is not ready\nmore"}}]}]`))
	assert.EqualError(t, err, "SynchronizedBeforeSuite failed: node is not ready")
}

func TestCheckPassList(t *testing.T) {
	specs, err := readReport(strings.NewReader(report))
	require.NoError(t, err)
	for _, tc := range []struct {
		name               string
		want               []string
		regressions, added []string
	}{
		{name: "all recorded passed", want: []string{probe}},
		{name: "nothing recorded", added: []string{probe}},
		{name: "each way of not passing", want: []string{probe, logPath, swap, "gone"}, regressions: []string{
			logPath + " (failed: Timed out after 300s.)", swap + " (skipped)", "gone (not run)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			regressions, added := checkPassList(tc.want, specs)
			assert.Equal(t, tc.regressions, regressions)
			assert.Equal(t, tc.added, added)
		})
	}
}

func TestSummarizeCmd(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(rep, []byte(report), 0o644))
	list := filepath.Join(dir, "recorded.passed")
	require.NoError(t, os.WriteFile(list, []byte("# recorded\n"+probe+"\n"+podname+"\n"), 0o644))
	var out bytes.Buffer
	ok, err := summarizeCmd([]string{"--report", rep, "--out", dir, "--pass-list", list}, &out)
	require.NoError(t, err)
	assert.False(t, ok, "a recorded spec failed")
	assert.Contains(t, out.String(), "REGRESSION: "+podname+" (failed: context deadline exceeded)")
	assert.Contains(t, out.String(), "1 of the 2 specs of "+list+" passed; 1 regressions, 0 new passes")

	passed, err := os.ReadFile(filepath.Join(dir, "passed.txt"))
	require.NoError(t, err)
	assert.Equal(t, probe+"\n", string(passed))
	failed, err := os.ReadFile(filepath.Join(dir, "failed.txt"))
	require.NoError(t, err)
	assert.Equal(t, logPath+"\n\tTimed out after 300s.\n"+podname+"\n\tcontext deadline exceeded\n", string(failed))
	summary, err := os.ReadFile(filepath.Join(dir, "summary.txt"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^Probing container\s+1\s+0\s+0\s+1m1s$`, string(summary))
	assert.Regexp(t, `(?m)^total\s+1\s+2\s+1\s+6m2s$`, string(summary))

	// The recorded list itself passes.
	require.NoError(t, os.WriteFile(list, []byte(probe+"\n"), 0o644))
	out.Reset()
	ok, err = summarizeCmd([]string{"--report", rep, "--out", dir, "--pass-list", list}, &out)
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestCompare(t *testing.T) {
	up, err := readReport(strings.NewReader(report))
	require.NoError(t, err)
	mini := []Spec{
		{Name: logPath, Area: "ContainerLogPath", Outcome: Passed},
		{Name: probe, Area: "Probing container", Outcome: Failed, Failure: "restart count 0"},
	}
	var out bytes.Buffer
	compare(&out, []run{{"upstream kubelet", up}, {"minikubelet", mini}}, true)
	assert.Equal(t, `| area | upstream kubelet passed | minikubelet passed | ran |
| --- | ---: | ---: | ---: |
| ContainerLogPath | 0 | 1 | 1 |
| Downward API volume | 0 | 0 | 1 |
| Probing container | 1 | 0 | 1 |
| **all** | **1** | **1** | **3** |

Passed under upstream kubelet, not under minikubelet (1):
- `+probe+` — failed: restart count 0
`, out.String())
}

func TestFocusRegexp(t *testing.T) {
	re := regexp.MustCompile(focusRegexp([]string{probe, logPath}))
	assert.True(t, re.MatchString(probe))
	assert.True(t, re.MatchString(logPath))
	assert.False(t, re.MatchString(podname))
	assert.False(t, re.MatchString(probe+" and more"), "anchored at the end")
	assert.True(t, re.MatchString("E2eNode Suite "+probe), "not at the start")
	assert.False(t, re.MatchString("[sig-node] Probing container should be restarted with a exec liveness probe"), "brackets are literal")
}

func TestPassedIn(t *testing.T) {
	specs, err := readReport(strings.NewReader(report))
	require.NoError(t, err)
	assert.Equal(t, []string{probe}, passedIn(specs, map[string]int{"Probing container": 0, "Pods": 0}, 0))
	assert.Empty(t, passedIn(specs, map[string]int{"Pods": 0}, 0), "Pods' only spec skipped itself")
	assert.Equal(t, []string{probe}, passedIn(specs, nil, 0))
}

func TestPassedInCaps(t *testing.T) {
	spec := func(area, name string, secs int, o Outcome) Spec {
		return Spec{Name: area + " " + name, Area: area, Outcome: o, RunTime: time.Duration(secs) * time.Second}
	}
	specs := []Spec{
		spec("DNS", "slow", 30, Passed), spec("DNS", "fast", 5, Passed), spec("DNS", "failed", 1, Failed),
		spec("DNS", "b tie", 10, Passed), spec("DNS", "a tie", 10, Passed),
		spec("Pods", "one", 40, Passed), spec("Pods", "two", 50, Passed),
		spec("Secrets", "one", 1, Passed),
	}
	for _, tc := range []struct {
		name    string
		areas   map[string]int
		perArea int
		want    []string
	}{
		{"no caps", nil, 0, []string{"DNS slow", "DNS fast", "DNS b tie", "DNS a tie", "Pods one", "Pods two", "Secrets one"}},
		{"the fastest two of each area, ties by name, in the reports' order", nil, 2, []string{"DNS fast", "DNS a tie", "Pods one", "Pods two", "Secrets one"}},
		{"an area's own cap", map[string]int{"DNS": 1, "Pods": 0}, 0, []string{"DNS fast", "Pods one", "Pods two"}},
		{"a cap above the area's size keeps all", map[string]int{"Pods": 5}, 0, []string{"Pods one", "Pods two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, passedIn(specs, tc.areas, tc.perArea))
		})
	}
}

func TestParseAreas(t *testing.T) {
	got, err := parseAreas([]string{"Pods", "DNS | 3", "Services |all", "  Kubectl logs  "}, 2)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"Pods": 2, "DNS": 3, "Services": 0, "Kubectl logs": 2}, got)
	for _, bad := range []string{"DNS | 0", "DNS | -1", "DNS | three", "DNS |", " | 2"} {
		_, err := parseAreas([]string{bad}, 0)
		assert.Error(t, err, bad)
	}
}

func TestCompareRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "report.json"), []byte(content), 0o644))
		return d
	}
	up := write("up", report)
	// A run in two parts: the probe spec passed in the serial part.
	miniPar := write("mini-par", `[{"SpecReports": [{"ContainerHierarchyTexts": ["[sig-node] ContainerLogPath [NodeConformance]", "Pod with a container"],
		"LeafNodeType": "It", "LeafNodeText": "should print log to correct log path", "State": "passed"}]}]`)
	miniSer := write("mini-ser", `[{"SpecReports": [{"ContainerHierarchyTexts": ["[sig-node] Probing container"], "LeafNodeType": "It",
		"LeafNodeText": "should be restarted with a exec liveness probe [NodeConformance] [Conformance]", "State": "passed"}]}]`)
	mixed := write("mixed", `[{"SpecReports": []}]`)
	var out bytes.Buffer
	require.NoError(t, compareCmd([]string{"--markdown", "--run", "upstream=" + up, "--run", "minikubelet=" + miniPar + "," + miniSer,
		"--run", "mixed=" + mixed}, &out))
	assert.Equal(t, `| area | upstream passed | minikubelet passed | mixed passed | ran |
| --- | ---: | ---: | ---: | ---: |
| ContainerLogPath | 0 | 1 | 0 | 1 |
| Downward API volume | 0 | 0 | 0 | 1 |
| Probing container | 1 | 1 | 0 | 1 |
| **all** | **1** | **2** | **0** | **3** |

Passed under upstream, not under minikubelet (0):

Passed under upstream, not under mixed (1):
- `+probe+` — not run
`, out.String())

	assert.ErrorContains(t, compareCmd([]string{"--run", "upstream=" + up}, &out), "two runs or more")
	assert.ErrorContains(t, compareCmd([]string{"--run", "upstream=" + up, "--run", "nodir"}, &out), "want NAME=DIR")
	assert.ErrorContains(t, compareCmd([]string{"--run", "a=" + up, "--run", "b=" + filepath.Join(dir, "missing")}, &out), "run b:")
}

func TestPassedCmdMaxRuntime(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(rep, []byte(report), 0o644))
	var out bytes.Buffer
	require.NoError(t, passedCmd([]string{"--report", rep}, &out))
	assert.Equal(t, probe+"\n", out.String())
	out.Reset()
	require.NoError(t, passedCmd([]string{"--report", rep, "--max-runtime", "1m"}, &out))
	assert.Empty(t, out.String(), "the probe spec took 61s")
	out.Reset()
	require.NoError(t, passedCmd([]string{"--report", rep, "--max-runtime", "61s"}, &out))
	assert.Equal(t, probe+"\n", out.String(), "a spec of exactly the limit is kept")

	areas := filepath.Join(dir, "areas")
	require.NoError(t, os.WriteFile(areas, []byte("# comment\nProbing container | nine\n"), 0o644))
	assert.ErrorContains(t, passedCmd([]string{"--report", rep, "--areas", areas}, &out), areas+`: area "Probing container": cap "nine"`)
	assert.ErrorContains(t, passedCmd([]string{"--report", rep, "--per-area", "-1"}, &out), "--per-area -1")
}
