package agenttest_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// hooked is a pod whose container "app" has exec postStart and preStop
// hooks and an exec readiness probe.
func hooked(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "registry.example/app:1", Command: []string{"/app"},
			Lifecycle: &v1.Lifecycle{
				PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/hooks/warm"}}},
				PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/hooks/drain", "--all"}}},
			},
			ReadinessProbe: &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/ready"}}},
				PeriodSeconds: 10,
			},
		}}},
	}
}

// Options.ExecRules answer the probes, PodReady reads the Ready condition,
// PodEvents keeps one pod's events, and ExecCalls and Hooks tell which
// commands a container received, after the pod is gone too.
func TestNodeInspection(t *testing.T) {
	tests := []struct {
		name      string
		readyExit int32 // the exit code of /ready
		wantReady bool
	}{
		{name: "probe passes", readyExit: 0, wantReady: true},
		{name: "probe fails", readyExit: 1, wantReady: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := agenttest.NewNode(t, agenttest.Options{
					ExecRules: []fake.ExecRule{{Command: []string{"/ready"}, ExitCode: tt.readyExit}},
				})
				n.AddPod(hooked("web"))
				n.AddPod(hooked("other"))
				n.Step(25 * time.Second)

				assert.Equal(t, tt.wantReady, n.PodReady("default", "web"))
				assert.False(t, n.PodReady("default", "absent"), "a pod that is not there is not ready")

				events := n.PodEvents("default", "web")
				require.NotEmpty(t, events)
				for _, e := range events {
					assert.Equal(t, "Pod default/web", e.Object)
				}
				var reasons []string
				for _, e := range events {
					reasons = append(reasons, e.Reason)
				}
				assert.Subset(t, reasons, []string{"Pulled", "Created", "Started"})
				assert.Equal(t, !tt.wantReady, slices.Contains(reasons, "Unhealthy"), "reasons %v", reasons)

				n.DeletePod("default", "web")
				n.Step(time.Minute)
				require.Nil(t, n.Pod("default", "web"), "the pod is gone")

				assert.Equal(t, []agenttest.Hook{
					{Handler: "PostStart", Command: []string{"/hooks/warm"}},
					{Handler: "PreStop", Command: []string{"/hooks/drain", "--all"}},
				}, n.Hooks("default", "web", "app"))
				calls := n.ExecCalls("default", "web", "app")
				assert.Equal(t, []string{"/hooks/warm"}, calls[0], "postStart runs first")
				assert.Equal(t, []string{"/hooks/drain", "--all"}, calls[len(calls)-1], "preStop runs last")
				probes := 0
				for _, c := range calls[1 : len(calls)-1] {
					assert.Equal(t, []string{"/ready"}, c)
					probes++
				}
				assert.GreaterOrEqual(t, probes, 2, "the readiness probe ran every 10s")
				assert.Empty(t, n.ExecCalls("default", "web", "sidecar"), "no such container")
				assert.Len(t, n.Hooks("default", "other", "app"), 1, "the other pod's postStart only")
			})
		})
	}
}
