package prometheus_test

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
)

// Every method of the runtime is measured under upstream's operation_type;
// a failed call is an error too.
func TestInstrumentRuntimeOperations(t *testing.T) {
	ctx := context.Background()
	img := &runtimeapi.ImageSpec{Image: "busybox:1.36"}
	calls := []struct {
		op   string
		call func(rt agent.FullRuntime) error
	}{
		{"version", func(rt agent.FullRuntime) error { _, err := rt.Version(ctx, "v1"); return err }},
		{"status", func(rt agent.FullRuntime) error { _, err := rt.Status(ctx, false); return err }},
		{"runtime_config", func(rt agent.FullRuntime) error { _, err := rt.RuntimeConfig(ctx); return err }},
		{"update_runtime_config", func(rt agent.FullRuntime) error { return rt.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{}) }},
		{"pull_image", func(rt agent.FullRuntime) error { _, err := rt.PullImage(ctx, img, nil, nil); return err }},
		{"image_status", func(rt agent.FullRuntime) error { _, err := rt.ImageStatus(ctx, img, false); return err }},
		{"list_images", func(rt agent.FullRuntime) error { _, err := rt.ListImages(ctx, nil); return err }},
		{"image_fs_info", func(rt agent.FullRuntime) error { _, err := rt.ImageFsInfo(ctx); return err }},
		{"run_podsandbox", func(rt agent.FullRuntime) error {
			_, err := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: "u"}}, "")
			return err
		}},
		{"podsandbox_status", func(rt agent.FullRuntime) error { _, err := rt.PodSandboxStatus(ctx, "nope", false); return err }},
		{"list_podsandbox", func(rt agent.FullRuntime) error { _, err := rt.ListPodSandbox(ctx, nil); return err }},
		{"podsandbox_stats", func(rt agent.FullRuntime) error { _, err := rt.PodSandboxStats(ctx, "nope"); return err }},
		{"list_podsandbox_stats", func(rt agent.FullRuntime) error { _, err := rt.ListPodSandboxStats(ctx, nil); return err }},
		{"create_container", func(rt agent.FullRuntime) error {
			_, err := rt.CreateContainer(ctx, "nope", &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: img}, nil)
			return err
		}},
		{"start_container", func(rt agent.FullRuntime) error { return rt.StartContainer(ctx, "nope") }},
		{"stop_container", func(rt agent.FullRuntime) error { return rt.StopContainer(ctx, "nope", 0) }},
		{"remove_container", func(rt agent.FullRuntime) error { return rt.RemoveContainer(ctx, "nope") }},
		{"list_containers", func(rt agent.FullRuntime) error { _, err := rt.ListContainers(ctx, nil); return err }},
		{"container_status", func(rt agent.FullRuntime) error { _, err := rt.ContainerStatus(ctx, "nope", false); return err }},
		{"update_container", func(rt agent.FullRuntime) error { return rt.UpdateContainerResources(ctx, "nope", nil) }},
		{"reopen_container_log", func(rt agent.FullRuntime) error { return rt.ReopenContainerLog(ctx, "nope") }},
		{"container_stats", func(rt agent.FullRuntime) error { _, err := rt.ContainerStats(ctx, "nope"); return err }},
		{"list_container_stats", func(rt agent.FullRuntime) error { _, err := rt.ListContainerStats(ctx, nil); return err }},
		{"exec_sync", func(rt agent.FullRuntime) error {
			_, err := rt.ExecSync(ctx, "nope", []string{"true"}, time.Second)
			return err
		}},
		{"exec", func(rt agent.FullRuntime) error {
			_, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "nope", Cmd: []string{"sh"}, Stdout: true})
			return err
		}},
		{"attach", func(rt agent.FullRuntime) error {
			_, err := rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "nope", Stdout: true})
			return err
		}},
		{"port_forward", func(rt agent.FullRuntime) error {
			_, err := rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "nope"})
			return err
		}},
		{"remove_image", func(rt agent.FullRuntime) error { return rt.RemoveImage(ctx, img) }},
		{"stop_podsandbox", func(rt agent.FullRuntime) error { return rt.StopPodSandbox(ctx, "nope") }},
		{"remove_podsandbox", func(rt agent.FullRuntime) error { return rt.RemovePodSandbox(ctx, "nope") }},
		{"get_container_events", func(rt agent.FullRuntime) error {
			cctx, cancel := context.WithCancel(ctx)
			cancel() // the stream ends at once
			for _, err := range rt.GetContainerEvents(cctx) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	}
	runtimeType := reflect.TypeFor[agent.FullRuntime]()
	require.Equal(t, runtimeType.NumMethod(), len(calls), "one call per method of agent.FullRuntime")

	fr := fake.New(fake.Options{})
	defer fr.Close()
	m := newMetrics(t)
	rt := m.InstrumentRuntime(fr)
	var ops []string
	for _, c := range calls {
		t.Run(c.op, func(t *testing.T) {
			err := c.call(rt)
			assert.Equal(t, 1.0, value(t, m.Registry(), "kubelet_runtime_operations_total", opLabel(c.op)), "operations")
			wantErrors := 0.0
			if err != nil {
				wantErrors = 1
			}
			assert.Equal(t, wantErrors, value(t, m.Registry(), "kubelet_runtime_operations_errors_total", opLabel(c.op)), "errors (err %v)", err)
			n, _ := histogram(t, m.Registry(), "kubelet_runtime_operations_duration_seconds", opLabel(c.op))
			assert.Equal(t, uint64(1), n, "durations")
		})
		ops = append(ops, c.op)
	}
	assert.ElementsMatch(t, ops, labelValues(t, m, "kubelet_runtime_operations_total", "operation_type"), "no other operation")
}

func opLabel(op string) map[string]string { return map[string]string{"operation_type": op} }

// labelValues returns the values of label across the series of name.
func labelValues(t *testing.T, m *prometheus.Metrics, name, label string) []string {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	var vals []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == label {
					vals = append(vals, l.GetValue())
				}
			}
		}
	}
	slices.Sort(vals)
	return vals
}

// steppingRuntime is a runtime whose RunPodSandbox and PullImage take d on
// clk (and PullImage fails), and whose event stream yields events, then
// fails.
type steppingRuntime struct {
	agent.FullRuntime
	clk    *clocktesting.FakePassiveClock
	d      time.Duration
	events []*runtimeapi.ContainerEventResponse
}

func (r *steppingRuntime) RunPodSandbox(context.Context, *runtimeapi.PodSandboxConfig, string) (string, error) {
	r.clk.SetTime(r.clk.Now().Add(r.d))
	return "sb", nil
}

func (r *steppingRuntime) PullImage(context.Context, *runtimeapi.ImageSpec, *runtimeapi.AuthConfig, *runtimeapi.PodSandboxConfig) (string, error) {
	r.clk.SetTime(r.clk.Now().Add(r.d))
	return "", errors.New("no such image")
}

func (r *steppingRuntime) GetContainerEvents(context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		for _, ev := range r.events {
			r.clk.SetTime(r.clk.Now().Add(r.d))
			if !yield(ev, nil) {
				return
			}
		}
		yield(nil, errors.New("stream broken"))
	}
}

// Durations are observed on the Metrics' clock in upstream's buckets
// (5ms, times 2.5, fourteen of them).
func TestInstrumentRuntimeDurations(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := prometheus.New(prometheus.Options{Clock: clk})
	require.NoError(t, err)
	rt := m.InstrumentRuntime(&steppingRuntime{clk: clk, d: 30 * time.Millisecond})
	_, err = rt.RunPodSandbox(context.Background(), nil, "")
	require.NoError(t, err)
	_, err = rt.PullImage(context.Background(), nil, nil, nil)
	require.Error(t, err)

	want := `
# HELP kubelet_runtime_operations_duration_seconds [ALPHA] Duration in seconds of runtime operations. Broken down by operation type.
# TYPE kubelet_runtime_operations_duration_seconds histogram
`
	for _, op := range []string{"pull_image", "run_podsandbox"} {
		cumulative := 0
		for _, le := range []string{"0.005", "0.0125", "0.03125", "0.078125", "0.1953125", "0.48828125", "1.220703125",
			"3.0517578125", "7.62939453125", "19.073486328125", "47.6837158203125", "119.20928955078125",
			"298.0232238769531", "745.0580596923828", "+Inf"} {
			if le == "0.03125" {
				cumulative = 1
			}
			want += `kubelet_runtime_operations_duration_seconds_bucket{operation_type="` + op + `",le="` + le + `"} ` + string(rune('0'+cumulative)) + "\n"
		}
		want += `kubelet_runtime_operations_duration_seconds_sum{operation_type="` + op + `"} 0.03` + "\n"
		want += `kubelet_runtime_operations_duration_seconds_count{operation_type="` + op + `"} 1` + "\n"
	}
	want += `
# HELP kubelet_runtime_operations_errors_total [ALPHA] Cumulative number of runtime operation errors by operation type.
# TYPE kubelet_runtime_operations_errors_total counter
kubelet_runtime_operations_errors_total{operation_type="pull_image"} 1
`
	assert.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"kubelet_runtime_operations_duration_seconds", "kubelet_runtime_operations_errors_total"))
}

// A GetContainerEvents stream is one operation, timed from its first read
// to its end, and an error when it yields one.
func TestInstrumentRuntimeEvents(t *testing.T) {
	for _, tc := range []struct {
		name      string
		read      int // events read before stopping; -1: to the end
		wantErr   float64
		wantLasts float64
	}{
		{name: "read to its broken end", read: -1, wantErr: 1, wantLasts: 0.03},
		{name: "stopped after one event", read: 1, wantLasts: 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			m, err := prometheus.New(prometheus.Options{Clock: clk})
			require.NoError(t, err)
			stub := &steppingRuntime{clk: clk, d: 10 * time.Millisecond, events: []*runtimeapi.ContainerEventResponse{{ContainerId: "a"}, {ContainerId: "b"}, {ContainerId: "c"}}}
			n := 0
			for ev := range m.InstrumentRuntime(stub).GetContainerEvents(context.Background()) {
				if ev != nil {
					n++
				}
				if n == tc.read {
					break
				}
			}
			assert.Equal(t, 1.0, value(t, m.Registry(), "kubelet_runtime_operations_total", opLabel("get_container_events")))
			assert.Equal(t, tc.wantErr, value(t, m.Registry(), "kubelet_runtime_operations_errors_total", opLabel("get_container_events")))
			_, sum := histogram(t, m.Registry(), "kubelet_runtime_operations_duration_seconds", opLabel("get_container_events"))
			assert.InDelta(t, tc.wantLasts, sum, 1e-9)
		})
	}
}
