package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const upstream = `# HELP kubelet_running_pods [ALPHA] Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 2
# HELP kubelet_pod_worker_duration_seconds [ALPHA] Duration in seconds to sync a single pod.
# TYPE kubelet_pod_worker_duration_seconds histogram
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="0.005"} 1
kubelet_pod_worker_duration_seconds_bucket{operation_type="create",le="+Inf"} 1
kubelet_pod_worker_duration_seconds_sum{operation_type="create"} 0.001
kubelet_pod_worker_duration_seconds_count{operation_type="create"} 1
# HELP kubelet_evictions [ALPHA] Cumulative number of pod evictions by eviction signal
# TYPE kubelet_evictions counter
kubelet_evictions{eviction_signal="memory.available"} 1
# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.
# TYPE kubelet_node_name gauge
kubelet_node_name{node="n"} 1
# HELP kubelet_http_requests_total [ALPHA] Number of the http requests received since the server started
# TYPE kubelet_http_requests_total counter
kubelet_http_requests_total{method="GET"} 3
`

func TestCompare(t *testing.T) {
	tests := []struct {
		name     string
		ours     string
		required []string
		want     map[string]string // family -> verdict
		fail     bool
		lint     int
	}{
		{
			name: "every family served the same, help texts aside",
			ours: strings.ReplaceAll(upstream, "[ALPHA] ", ""),
			want: map[string]string{
				"kubelet_running_pods": HelpDiffers, "kubelet_pod_worker_duration_seconds": HelpDiffers,
				"kubelet_evictions": HelpDiffers, "kubelet_node_name": HelpDiffers, "kubelet_http_requests_total": HelpDiffers,
			},
		},
		{
			name: "a label renamed, buckets changed and a type changed fail",
			ours: strings.NewReplacer(`operation_type=`, `operation=`, `le="0.005"`, `le="0.01"`,
				"# TYPE kubelet_running_pods gauge", "# TYPE kubelet_running_pods counter").Replace(upstream),
			want: map[string]string{
				"kubelet_running_pods": Differs, "kubelet_pod_worker_duration_seconds": Differs, "kubelet_evictions": Same,
			},
			fail: true, lint: 1, // and the counter lacks _total
		},
		{
			name:     "a missing family fails only when required",
			ours:     cut(upstream, "kubelet_http_requests_total", "kubelet_node_name"),
			required: []string{"kubelet_node_name"},
			want: map[string]string{
				"kubelet_http_requests_total": Missing, "kubelet_node_name": Missing, "kubelet_evictions": Same,
			},
			fail: true,
		},
		{
			name: "a missing family not required is reported",
			ours: cut(upstream, "kubelet_http_requests_total"),
			want: map[string]string{"kubelet_http_requests_total": Missing},
		},
		{
			name: "a family of ours alone is reported, and linted",
			ours: upstream + "# HELP kubeletkit_pods Pods\n# TYPE kubeletkit_pods counter\nkubeletkit_pods 1\n",
			want: map[string]string{"kubeletkit_pods": OursOnly},
			fail: true, lint: 1, // a counter should end in _total
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, err := parse(strings.NewReader(upstream))
			if err != nil {
				t.Fatal(err)
			}
			ours, err := parse(strings.NewReader(tt.ours))
			if err != nil {
				t.Fatal(err)
			}
			req := map[string]bool{}
			for _, r := range tt.required {
				req[r] = true
			}
			e, err := compare(up, ours, req)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Row{}
			for _, row := range e.Rows {
				got[row.Name] = row
			}
			for name, verdict := range tt.want {
				if got[name].Verdict != verdict {
					t.Errorf("%s: %q (%s), want %q", name, got[name].Verdict, got[name].Detail, verdict)
				}
			}
			if len(e.Lint) != tt.lint {
				t.Errorf("lint problems %v, want %d", e.Lint, tt.lint)
			}
			if f := (Result{Endpoints: []Endpoint{e}}).failed(); f != tt.fail {
				t.Errorf("failed %v, want %v", f, tt.fail)
			}
		})
	}
}

// cut removes the families named from an exposition.
func cut(expo string, names ...string) string {
	var keep []string
	for line := range strings.Lines(expo) {
		drop := false
		for _, n := range names {
			if strings.Contains(line, n) {
				drop = true
			}
		}
		if !drop {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "")
}

func TestCompareDirsAndReport(t *testing.T) {
	up, ours := t.TempDir(), t.TempDir()
	write := func(dir, name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(up, "metrics.txt", upstream)
	write(ours, "metrics.txt", cut(upstream, "kubelet_node_name"))
	res, err := compareDirs(up, ours, map[string]bool{"kubelet_node_name": true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	res.write(&b)
	for _, want := range []string{
		"metrics-compare: FAIL: upstream serves 5 families: 4 the same, 0 with another help text, 0 differ, 1 missing (1 required)",
		"## metrics.txt",
		"| `kubelet_node_name` | **missing (required)** |  |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := compareDirs(up, t.TempDir(), nil); err == nil {
		t.Error("a scrape missing on our side is not an error")
	}
}

func TestReadRequired(t *testing.T) {
	path := filepath.Join(t.TempDir(), "req.txt")
	if err := os.WriteFile(path, []byte("# c\nkubelet_node_name # the node\n\nnot a name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRequired(path); err == nil || !strings.Contains(err.Error(), ":4:") {
		t.Errorf("err %v, want one naming line 4", err)
	}
	if req, err := readRequired("required.txt"); err != nil || !req["container_cpu_usage_seconds_total"] {
		t.Errorf("required.txt: %v, %v", req, err)
	}
}

func TestKnownDifferences(t *testing.T) {
	up, err := parse(strings.NewReader(upstream))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := parse(strings.NewReader(cut(upstream, "kubelet_node_name")))
	if err != nil {
		t.Fatal(err)
	}
	e, err := compare(up, ours, map[string]bool{"kubelet_node_name": true})
	if err != nil {
		t.Fatal(err)
	}
	res := Result{Endpoints: []Endpoint{e}}
	res.markKnown(map[string]bool{"kubelet_node_name": true, "kubelet_evictions": true})
	if res.failed() {
		t.Error("a known difference fails")
	}
	if want := []string{"kubelet_evictions"}; !slices.Equal(res.Fixed, want) {
		t.Errorf("fixed %v, want %v", res.Fixed, want)
	}
	var b strings.Builder
	res.write(&b)
	for _, want := range []string{"1 differences known", "take off the known list: kubelet_evictions", "missing (required) (known)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
