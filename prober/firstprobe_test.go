package prober_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/prober"
)

// A new container's first probe sends one update, after the probe: its
// result when it publishes one, else the initial value, so that a consumer
// syncing the pod on that update sees the probe's result.
func TestFirstProbeSendsOneUpdate(t *testing.T) {
	tests := []struct {
		name    string
		typ     prober.ProbeType
		outcome prober.Result
		want    prober.Result
	}{
		{"readiness succeeds", prober.Readiness, prober.Success, prober.Success},
		{"readiness fails: the initial Failure", prober.Readiness, prober.Failure, prober.Failure},
		{"liveness fails once of three: the initial Success", prober.Liveness, prober.Failure, prober.Success},
		{"liveness succeeds", prober.Liveness, prober.Success, prober.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clk := clocktesting.NewFakeClock(start)
			probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}, FailureThreshold: 3}
			c := v1.Container{Name: "app"}
			if tt.typ == prober.Readiness {
				c.ReadinessProbe = probe
			} else {
				c.LivenessProbe = probe
			}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
				Spec: v1.PodSpec{Containers: []v1.Container{c}}}
			status := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
				Name: "app", ContainerID: "containerd://c1",
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}},
			}}}
			probed := make(chan struct{}, 1)
			m, err := prober.New(prober.Options{
				Runner: prober.ProbeRunnerFunc(func(context.Context, prober.Target) (prober.Outcome, error) {
					return prober.Outcome{Result: tt.outcome}, nil
				}),
				Status:     statusFunc(func(types.UID) (v1.PodStatus, bool) { return status, true }),
				Clock:      clk,
				Jitter:     func(time.Duration) time.Duration { return 0 },
				AfterProbe: func(types.UID, string, prober.ProbeType, prober.Result) { probed <- struct{}{} },
			})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- m.Run(ctx) }()
			defer func() { cancel(); require.NoError(t, <-done) }()

			results := m.Readiness()
			if tt.typ == prober.Liveness {
				results = m.Liveness()
			}
			m.AddPod(pod)
			select {
			case <-probed:
			case <-time.After(10 * time.Second):
				t.Fatal("no probe ran")
			}
			select {
			case u := <-results.Updates():
				assert.Equal(t, "c1", u.ContainerID)
				assert.Equal(t, tt.want, u.Result)
			case <-time.After(10 * time.Second):
				t.Fatal("no update")
			}
			select {
			case u := <-results.Updates():
				t.Fatalf("a second update: %+v", u)
			default:
			}
		})
	}
}
