package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/server"
)

// minimalRuntime is a provider's runtime with only the methods every
// runtime must implement (agent.Runtime), its backend the fake runtime's
// sandboxes, containers and images. It has none of the optional
// capabilities: no exec or streaming, stats, events or status.
type minimalRuntime struct{ f agent.FullRuntime }

var _ agent.Runtime = minimalRuntime{}

func (m minimalRuntime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return m.f.Version(ctx, apiVersion)
}

func (m minimalRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	return m.f.RunPodSandbox(ctx, config, handler)
}

func (m minimalRuntime) StopPodSandbox(ctx context.Context, id string) error {
	return m.f.StopPodSandbox(ctx, id)
}

func (m minimalRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	return m.f.RemovePodSandbox(ctx, id)
}

func (m minimalRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return m.f.PodSandboxStatus(ctx, id, verbose)
}

func (m minimalRuntime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return m.f.ListPodSandbox(ctx, filter)
}

func (m minimalRuntime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return m.f.CreateContainer(ctx, sandboxID, config, sandboxConfig)
}

func (m minimalRuntime) StartContainer(ctx context.Context, id string) error {
	return m.f.StartContainer(ctx, id)
}

func (m minimalRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	return m.f.StopContainer(ctx, id, timeout)
}

func (m minimalRuntime) RemoveContainer(ctx context.Context, id string) error {
	return m.f.RemoveContainer(ctx, id)
}

func (m minimalRuntime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return m.f.ListContainers(ctx, filter)
}

func (m minimalRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return m.f.ContainerStatus(ctx, id, verbose)
}

func (m minimalRuntime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.ContainerResources) error {
	return m.f.UpdateContainerResources(ctx, id, resources)
}

func (m minimalRuntime) ReopenContainerLog(ctx context.Context, id string) error {
	return m.f.ReopenContainerLog(ctx, id)
}

func (m minimalRuntime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return m.f.ListImages(ctx, filter)
}

func (m minimalRuntime) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return m.f.ImageStatus(ctx, image, verbose)
}

func (m minimalRuntime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return m.f.PullImage(ctx, image, auth, sandboxConfig)
}

func (m minimalRuntime) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return m.f.RemoveImage(ctx, image)
}

// The minimal runtime has none of the optional capabilities, so that the
// test below is of an agent without any of them.
func TestMinimalRuntimeHasNoCapability(t *testing.T) {
	var rt any = minimalRuntime{}
	for name, ok := range map[string]bool{
		"Execer":         is[cri.Execer](rt),
		"Streamer":       is[cri.Streamer](rt),
		"StatsProvider":  is[cri.StatsProvider](rt),
		"ImageFSInfoer":  is[cri.ImageFSInfoer](rt),
		"EventSource":    is[cri.EventSource](rt),
		"StatusReporter": is[cri.StatusReporter](rt),
	} {
		assert.False(t, ok, name)
	}
}

func is[I any](v any) bool { _, ok := v.(I); return ok }

// A runtime with only the required methods runs pods: a pod turns Running
// and its containers are stopped when it is deleted. The node does without
// each missing capability as upstream does without an unimplemented CRI
// method: the PLEG relists (EventedPLEG asked for), the node is Ready (no
// runtime status), the kubelet API's exec and run answer that the runtime
// does not support them, the stats summary has no pods, an exec postStart
// hook fails and an exec readiness probe errors.
func TestMinimalRuntimeRunsPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{
			Agent:   agent.Options{EventedPLEG: true},
			Runtime: func(f agent.FullRuntime) agent.Runtime { return minimalRuntime{f} },
		})
		a := n.Agent()
		_, full := a.Runtime().(agent.FullRuntime)
		require.False(t, full, "the agent drives the minimal runtime as given")

		n.AddPod(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
		})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web", isRunning)), "Running")
		require.True(t, n.StepUntil(time.Minute, func() bool {
			st, ok := a.NodeStatus()
			return ok && nodeReady(st) == v1.ConditionTrue
		}), "the node is Ready without the runtime's status")

		h := server.New(server.Options{PodGetter: a.API(), Streaming: a.API(), Runner: a.API(), Checkpoints: a.API(),
			Auth: &server.Auth{Authenticator: tokens, Authorizer: onlyAdmin, NodeName: "node1"}}).Handler()
		for _, tc := range []struct{ method, path, want string }{
			{"GET", "/exec/default/web/web?command=sh&input=1&output=1",
				"exec: the container runtime does not support it (no cri.Streamer): " + cri.ErrUnimplemented.Error()},
			{"GET", "/attach/default/web/web?output=1",
				"attach: the container runtime does not support it (no cri.Streamer): " + cri.ErrUnimplemented.Error()},
			{"GET", "/portForward/default/web?port=80",
				"port forward: the container runtime does not support it (no cri.Streamer): " + cri.ErrUnimplemented.Error()},
			{"POST", "/run/default/web/web?cmd=true",
				"exec sync: the container runtime does not support it (no cri.Execer): " + cri.ErrUnimplemented.Error()},
			{"POST", "/checkpoint/default/web/web",
				"checkpointing of default/web/web failed (checkpoint: the container runtime does not support it (no cri.Checkpointer): " + cri.ErrUnimplemented.Error() + ")"},
		} {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			req.Header.Set("Authorization", "Bearer admin-token")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			assert.Equal(t, http.StatusInternalServerError, w.Code, tc.path)
			assert.Equal(t, tc.want, w.Body.String(), tc.path)
		}

		s, err := a.API().Summary(context.Background(), false)
		if runtime.GOOS == "linux" {
			require.NoError(t, err, "a summary without the runtime's stats")
			assert.Empty(t, s.Pods, "no pod measured")
			assert.Nil(t, s.Node.Runtime, "no image filesystem")
		}

		probed := v1.Container{Name: "probed", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
			ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 10}}
		hooked := v1.Container{Name: "hooked", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
			Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hooked", Namespace: "default"}, Spec: v1.PodSpec{Containers: []v1.Container{hooked}}})
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probed", Namespace: "default"}, Spec: v1.PodSpec{Containers: []v1.Container{probed}}})
		event := func(pod, reason, message string) func() bool {
			return func() bool {
				for _, e := range n.Events() {
					if e.Object == "Pod default/"+pod && e.Reason == reason && strings.Contains(e.Message, message) {
						return true
					}
				}
				return false
			}
		}
		require.True(t, n.StepUntil(time.Minute, event("hooked", "FailedPostStartHook", "")), "an exec postStart hook fails without an Execer")
		require.True(t, n.StepUntil(time.Minute, event("probed", "Unhealthy", "Readiness probe errored")), "an exec probe errors without an Execer")
		assert.True(t, isRunning(*n.Pod("default", "probed")))
		assert.False(t, isReady(*n.Pod("default", "probed")), "never ready by an exec probe")

		n.DeletePod("default", "hooked")
		n.DeletePod("default", "probed")
		n.DeletePod("default", "web")
		require.True(t, n.StepUntil(time.Minute, func() bool { return len(n.Pods()) == 0 }), "deleted")
		for _, c := range n.Runtime().Containers() {
			assert.NotEqual(t, runtimeapi.ContainerState_CONTAINER_RUNNING, c.GetState(), c.GetMetadata().GetName())
		}
	})
}

func nodeReady(st v1.NodeStatus) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}
