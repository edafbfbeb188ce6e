package podsync_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestKillPodRunsPreStopExec(t *testing.T) {
	h := newHarness(t)
	c := ctr("app")
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}}
	grace := int64(20)
	pod := newPod("", nil, c)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	require.NoError(t, h.sync(pod).Err())
	st := h.status(pod)
	require.NoError(t, h.s.KillPod(context.Background(), pod, st, nil).Err())
	execs := h.rt.CallsOf(fake.ExecSync)
	require.Len(t, execs, 1)
	assert.Equal(t, []string{"/bin/drain"}, execs[0].Request.(*runtimeapi.ExecSyncRequest).GetCmd())
	assert.Zero(t, execs[0].Request.(*runtimeapi.ExecSyncRequest).GetTimeout(),
		"an exec preStop hook has no timeout of its own: it runs on past the grace period, until its container stops")
	stops := h.rt.CallsOf(fake.StopContainer)
	require.Len(t, stops, 1)
	assert.Equal(t, int64(20), stops[0].Request.(*runtimeapi.StopContainerRequest).GetTimeout())

	// Without the pod (known only from the runtime) the hook comes from the
	// container's annotation.
	require.NoError(t, h.sync(pod).Err()) // new sandbox, new container
	require.NoError(t, h.s.KillPod(context.Background(), nil, h.status(pod), nil).Err())
	assert.Len(t, h.rt.CallsOf(fake.ExecSync), 2)
	stops = h.rt.CallsOf(fake.StopContainer)
	assert.Equal(t, int64(20), stops[len(stops)-1].Request.(*runtimeapi.StopContainerRequest).GetTimeout())
}

func TestKillPodRunsPreStopHTTP(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Path + " " + r.Header.Get("X-Drain"))
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	h := newHarness(t)
	c := ctr("app")
	c.Ports = []v1.ContainerPort{{Name: "admin", ContainerPort: int32(mustAtoi(t, port))}}
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
		Host: host, Port: intstr.FromString("admin"), Path: "/drain", HTTPHeaders: []v1.HTTPHeader{{Name: "X-Drain", Value: "now"}},
	}}}
	pod := newPod("", nil, c)
	require.NoError(t, h.sync(pod).Err())
	require.NoError(t, h.s.KillPod(context.Background(), pod, h.status(pod), nil).Err())
	assert.Equal(t, "/drain now", got.Load())
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// As upstream orders a pod's termination: the app containers stop first,
// then the sidecars in reverse order, each once the one after it stopped;
// every preStop hook runs at once, before any wait.
func TestKillPodStopsSidecarsInReverseOrder(t *testing.T) {
	h := newHarness(t)
	withHook := func(c v1.Container) v1.Container {
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain", c.Name}}}}
		return c
	}
	pod := newPod("", nil, withHook(ctr("app1")), ctr("app2"))
	pod.Spec.InitContainers = []v1.Container{withHook(sidecar("side1")), sidecar("side2"), withHook(sidecar("side3"))}
	for range 5 {
		require.NoError(t, h.sync(pod).Err())
	}
	st := h.status(pod)
	running := 0
	for _, c := range st.Containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	require.Equal(t, 5, running, "every container runs")

	require.NoError(t, h.s.KillPod(context.Background(), pod, st, nil).Err())
	var stopped []string
	for _, c := range h.rt.CallsOf(fake.StopContainer) {
		stopped = append(stopped, st.ContainerByID(c.Request.(*runtimeapi.StopContainerRequest).GetContainerId()).GetMetadata().GetName())
	}
	require.Len(t, stopped, 5)
	assert.ElementsMatch(t, []string{"app1", "app2"}, stopped[:2], "the apps first")
	assert.Equal(t, []string{"side3", "side2", "side1"}, stopped[2:], "then the sidecars, last first")
	var hooks []string
	for _, c := range h.rt.CallsOf(fake.ExecSync) {
		hooks = append(hooks, c.Request.(*runtimeapi.ExecSyncRequest).GetCmd()[1])
	}
	assert.ElementsMatch(t, []string{"app1", "side1", "side3"}, hooks)
}
