package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseStatCPU(t *testing.T) {
	// Fields after the command: state, ppid, pgrp, session, tty_nr,
	// tpgid, flags, minflt, cminflt, majflt, cmajflt, utime, stime, ...
	tail := " S 1 2 3 0 -1 4194560 100 0 0 0 250 75 7 9 20 0 12 0"
	tests := []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{name: "plain", stat: "42 (kubelet)" + tail, want: 3250 * time.Millisecond},
		{name: "spaces and parentheses in the name", stat: "42 (a) (b c)" + tail, want: 3250 * time.Millisecond},
		{name: "too few fields", stat: "42 (kubelet) S 1 2 3", wantErr: true},
		{name: "no name", stat: "42 kubelet" + tail, wantErr: true},
		{name: "not a number", stat: "42 (kubelet) S 1 2 3 0 -1 4194560 100 0 0 0 x 75", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseStatusMemory(t *testing.T) {
	tests := []struct {
		name, status string
		rss, hwm     int64
		wantErr      bool
	}{
		{name: "both", status: "Name:\tkubelet\nVmHWM:\t   2048 kB\nVmRSS:\t   1024 kB\nThreads:\t9\n", rss: 1 << 20, hwm: 2 << 20},
		{name: "no VmHWM", status: "VmRSS:\t1024 kB\n", wantErr: true},
		{name: "not kB", status: "VmHWM:\t2048 MB\nVmRSS:\t1024 kB\n", wantErr: true},
		{name: "a kernel thread has neither", status: "Name:\tkthreadd\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rss, hwm, err := parseStatusMemory([]byte(tt.status))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.rss, rss)
			assert.Equal(t, tt.hwm, hwm)
		})
	}
}

func TestParseLoadAverage(t *testing.T) {
	got, err := parseLoadAverage([]byte("7.57 5.66 4.57 3/312 28374\n"))
	require.NoError(t, err)
	assert.InDelta(t, 7.57, got, 1e-9)
	_, err = parseLoadAverage(nil)
	assert.Error(t, err)
	_, err = parseLoadAverage([]byte("x 1 2"))
	assert.Error(t, err)
}

func TestReadProcOfThisProcess(t *testing.T) {
	s, err := readProc(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, s.RSS)
	assert.GreaterOrEqual(t, s.HWM, s.RSS)
}

func TestCount(t *testing.T) {
	const list = `{"kind":"PodList","items":[
	  {"metadata":{"name":"bench-0001-kk-bench"},"status":{"phase":"Running"}},
	  {"metadata":{"name":"bench-0002-kk-bench"},"status":{"phase":"Pending"}},
	  {"metadata":{"name":"other-kk-bench"},"status":{"phase":"Running"}},
	  {"metadata":{"name":"bench-0003-kk-bench"},"status":{"phase":"Failed","reason":"OutOfpods","message":"Node didn't have enough resource: pods"}},
	  {"metadata":{"name":"bench-0004-kk-bench"},"status":{"phase":"Failed","reason":"UnexpectedAdmissionError"}},
	  {"metadata":{"name":"bench-extra-kk-bench"},"status":{"phase":"Running",
	    "conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"True"}]}}]}`
	tests := []struct {
		name, list string
		want       podCounts
		wantErr    bool
	}{
		{name: "mixed", list: list, want: podCounts{Listed: 5, Running: 2, Failed: 2,
			Failure: "bench-0003-kk-bench: OutOfpods: Node didn't have enough resource: pods", Extra: v1.PodRunning, ExtraReady: true}},
		{name: "extra not ready", list: `{"items":[{"metadata":{"name":"bench-extra-n"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}}]}`,
			want: podCounts{Listed: 1, Running: 1, Extra: v1.PodRunning}},
		{name: "a pod whose name only starts like the extra one", list: `{"items":[{"metadata":{"name":"bench-extras-n"},"status":{"phase":"Pending"}}]}`,
			want: podCounts{Listed: 1}},
		{name: "empty", list: `{"kind":"PodList","items":[]}`},
		{name: "not JSON", list: `<html>`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := count([]byte(tt.list))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPollerDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		p    poller
		want time.Time
	}{
		{name: "first sample at once", p: poller{min: 10 * time.Millisecond}},
		{name: "cheap samples at min", p: poller{min: 10 * time.Millisecond, last: t0, cost: time.Millisecond}, want: t0.Add(10 * time.Millisecond)},
		{name: "costly samples at three times their cost", p: poller{min: 10 * time.Millisecond, last: t0, cost: 20 * time.Millisecond}, want: t0.Add(60 * time.Millisecond)},
		{name: "never more than maxPause apart", p: poller{min: 10 * time.Millisecond, last: t0, cost: time.Second}, want: t0.Add(maxPause)},
		{name: "min above maxPause", p: poller{min: time.Second, last: t0, cost: time.Millisecond}, want: t0.Add(time.Second)},
		{name: "eager: at min whatever the cost", p: poller{min: 2 * time.Millisecond, eager: true, last: t0, cost: 50 * time.Millisecond}, want: t0.Add(2 * time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.due())
		})
	}
}

func TestManifests(t *testing.T) {
	dir := t.TempDir()
	manifestDir, extra := filepath.Join(dir, "manifests"), filepath.Join(dir, "extra", "bench-extra.yaml")
	require.NoError(t, manifests([]string{"--dir", manifestDir, "--n", "3", "--extra", extra, "--image", "busybox:1"}))

	entries, err := os.ReadDir(manifestDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"bench-0001.yaml", "bench-0002.yaml", "bench-0003.yaml"}, names)

	for path, name := range map[string]string{filepath.Join(manifestDir, "bench-0002.yaml"): "bench-0002", extra: "bench-extra"} {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var pod v1.Pod
		require.NoError(t, yaml.UnmarshalStrict(data, &pod))
		assert.Equal(t, "Pod", pod.Kind)
		assert.Equal(t, name, pod.Name)
		assert.Equal(t, "default", pod.Namespace)
		require.Len(t, pod.Spec.Containers, 1)
		c := pod.Spec.Containers[0]
		assert.Equal(t, "busybox:1", c.Image)
		assert.Equal(t, []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}, c.Command)
		assert.Nil(t, c.ReadinessProbe, "Ready as soon as it runs")
	}

	err = manifests([]string{"--dir", manifestDir, "--extra", filepath.Join(manifestDir, "x.yaml")})
	assert.ErrorContains(t, err, "outside --dir")
}

func result(agent, runtime string, pods int, scale float64) *Result {
	return &Result{
		Agent: agent, Runtime: runtime, Pods: pods,
		FirstAnswer: 0.1 * scale, FirstRunning: 0.2 * scale, AllRunning: 1 * scale,
		StartupCPU: 0.5 * scale, StartupPeakRSS: 40 * scale,
		SteadySeconds: 60, SteadyCPU: 0.6 * scale, SteadyRSS: 30 * scale, SteadyPeakRSS: 31 * scale,
		ExtraRunning: 0.3 * scale, ExtraReady: 0.4 * scale,
		DeletePods: 0.2 * scale, DeleteContainers: 0.3 * scale, Resolution: 0.05,
		LoadStart: 0.5 * scale, LoadEnd: 0.75 * scale,
	}
}

func TestWriteTables(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, writeTables(&out, "upstream", []*Result{
		result("upstream", "containerd", 10, 1), result("minikubelet", "containerd", 10, 2),
		result("minikubelet", "fakecri", 100, 0.5), result("upstream", "fakecri", 100, 1),
	}))
	want := `fakecri, 100 pods (steady state 60 s):

| measure | upstream | minikubelet | ratio | goal | met |
|---|--:|--:|--:|---|---|
| /pods first answers (s) | 0.100 | 0.050 | 0.50 |  |  |
| first pod Running (s) | 0.200 | 0.100 | 0.50 | ratio ≤ 1.0, ≤ 0.3 s | yes |
| all pods Running (s) | 1.000 | 0.500 | 0.50 | ratio ≤ 1.0 | yes |
| start-up CPU (s) | 0.500 | 0.250 | 0.50 | ratio ≤ 1.0 | yes |
| start-up peak RSS (MiB) | 40.0 | 20.0 | 0.50 | ratio ≤ 1.0 | yes |
| steady CPU (s) | 0.600 | 0.300 | 0.50 | ratio ≤ 1.0 | yes |
| steady RSS (MiB) | 30.0 | 15.0 | 0.50 | ratio ≤ 1.0 | yes |
| one more pod Ready (s) | 0.400 | 0.200 | 0.50 | ratio ≤ 1.0 | yes |
| delete: /pods empty (s) | 0.200 | 0.100 | 0.50 | ratio ≤ 1.0 | yes |
| delete: no container runs (s) | 0.300 | 0.150 | 0.50 | ratio ≤ 1.0 | yes |

Each time is late by at most 50 ms (upstream) and 50 ms (minikubelet): the widest gap between two samples.
Load average (1 min) at the start and the end: 0.50–0.75 (upstream), 0.25–0.38 (minikubelet).

containerd, 10 pods (steady state 60 s):

| measure | upstream | minikubelet | ratio | goal | met |
|---|--:|--:|--:|---|---|
| /pods first answers (s) | 0.100 | 0.200 | 2.00 |  |  |
| first pod Running (s) | 0.200 | 0.400 | 2.00 | ratio ≤ 1.0 | no |
| all pods Running (s) | 1.000 | 2.000 | 2.00 | ratio ≤ 1.0 | no |
| start-up CPU (s) | 0.500 | 1.000 | 2.00 | ratio ≤ 1.0 | no |
| start-up peak RSS (MiB) | 40.0 | 80.0 | 2.00 | ratio ≤ 1.0 | no |
| steady CPU (s) | 0.600 | 1.200 | 2.00 | ratio ≤ 1.0 | no |
| steady RSS (MiB) | 30.0 | 60.0 | 2.00 | ratio ≤ 1.0 | no |
| one more pod Ready (s) | 0.400 | 0.800 | 2.00 | ratio ≤ 1.0, ≤ 0.5 s | no |
| delete: /pods empty (s) | 0.200 | 0.400 | 2.00 | ratio ≤ 1.0 | no |
| delete: no container runs (s) | 0.300 | 0.600 | 2.00 | ratio ≤ 1.0 | no |

Each time is late by at most 50 ms (upstream) and 50 ms (minikubelet): the widest gap between two samples.
Load average (1 min) at the start and the end: 0.50–0.75 (upstream), 1.00–1.50 (minikubelet).
`
	assert.Equal(t, want, out.String())
}

func TestWriteTablesRefusesAnIncompleteGroup(t *testing.T) {
	tests := []struct {
		name    string
		results []*Result
	}{
		{name: "no base", results: []*Result{result("minikubelet", "fakecri", 10, 1)}},
		{name: "no other agent", results: []*Result{result("upstream", "fakecri", 10, 1)}},
		{name: "a third agent", results: []*Result{result("upstream", "fakecri", 10, 1), result("a", "fakecri", 10, 1), result("b", "fakecri", 10, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Error(t, writeTables(&bytes.Buffer{}, "upstream", tt.results))
		})
	}
}
