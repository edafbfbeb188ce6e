package apiserver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	crifake "github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// runJoined runs an agent joined to client with the local state st on the
// runtime rt until the returned stop is called.
func runJoined(t *testing.T, client *fake.Clientset, st *localstate.State, rt *crifake.Runtime, root string) (*agent.Agent, *apiserver.Joined, func()) {
	t.Helper()
	j, err := apiserver.Join(client, "n1", apiserver.JoinOptions{LocalState: st})
	require.NoError(t, err)
	opts := agent.Options{
		RootDir: root,
		Node: agent.NodeOptions{HostIPs: []string{"192.0.2.10"}, Machine: nodetest.Machine{Cap: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}}},
		Security: agent.SecurityOptions{NoMounts: true},
		Runtime:  rt,
		Eviction: agent.EvictionOptions{Stats: &evictiontest.Stats{}},
		Rand:     func() float64 { return 0 },
	}
	require.NoError(t, j.Apply(&opts))
	a, err := agent.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx, a) }()
	return a, j, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// cutOff makes every request and watch of client fail as a refused
// connection while the returned flag is set (it starts unset).
func cutOff(client *fake.Clientset) *atomic.Bool {
	down := &atomic.Bool{}
	client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		if down.Load() {
			return true, nil, errUnreachable
		}
		return false, nil, nil
	})
	client.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) {
		if down.Load() {
			return true, nil, errUnreachable
		}
		return false, nil, nil
	})
	return down
}

func keptContainersOf(t *testing.T, rt *crifake.Runtime, pod string) (running, all []string) {
	t.Helper()
	cs, err := rt.ListContainers(context.Background(), nil)
	require.NoError(t, err)
	for _, c := range cs {
		if c.Labels["io.kubernetes.pod.name"] != pod {
			continue
		}
		all = append(all, c.Id)
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running = append(running, c.Id)
		}
	}
	return running, all
}

func statusOf(a *agent.Agent, name string) *v1.Pod {
	for _, p := range a.PodStatuses() {
		if p.Name == name {
			return &p
		}
	}
	return nil
}

// A node restarted while its API server does not answer runs the pods it
// kept (adopting their containers, restarting a crashing one with the
// environment of a kept configMap), and converges when the server answers:
// a pod deleted meanwhile is terminated, a new one starts, the kept pods
// go on with the same containers.
func TestJoinedAgentRunsItsLocalStateWhileTheAPIServerIsAway(t *testing.T) {
	// apimachinery's HandleError, which the reflectors call on every
	// failed list, sleeps out a process-wide rate limit measured from the
	// last error's time.Now(): after an earlier synctest bubble whose fake
	// clock ran later than this one's, that is minutes of sleep in the pod
	// source's reflector. Only its logging is kept while this test runs.
	handlers := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = handlers[:1]
	t.Cleanup(func() { utilruntime.ErrorHandlers = handlers })
	synctest.Test(t, func(t *testing.T) {
		cfg := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg", UID: "cfg-uid", ResourceVersion: "1"}, Data: map[string]string{"mode": "edge"}}
		web, job := apiPod("default", "web", "u-web", "n1"), apiPod("default", "job", "u-job", "n1")
		crash := apiPod("default", "crash", "u-crash", "n1")
		crash.Spec.Containers = []v1.Container{{Name: "app", Image: "busybox", Command: []string{"crash"},
			Env: []v1.EnvVar{{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}}}}}
		kubernetes := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", UID: "svc-uid", ResourceVersion: "1"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}}}}
		client := fake.NewClientset(web, job, crash, cfg, kubernetes)
		allowAll(client, "")
		down := cutOff(client)
		rt := crifake.New(crifake.Options{Rules: []crifake.Rule{{CommandPrefix: []string{"crash"},
			Behavior: crifake.Behavior{Outcome: crifake.Exit, ExitCode: 1, RunFor: 5 * time.Second}}}})
		defer rt.Close()
		st, err := localstate.New(localstate.NewMemory(0))
		require.NoError(t, err)
		root := t.TempDir()

		// Online: the pods run, and the node keeps them.
		_, _, stop := runJoined(t, client, st, rt, root)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		stop()
		kept, err := st.Pods()
		require.NoError(t, err)
		assert.Len(t, kept, 3)
		_, ok, err := st.ConfigMap("default", "cfg")
		require.NoError(t, err)
		require.True(t, ok, "the configMap the crashing pod's environment reads is kept")
		webRunning, _ := keptContainersOf(t, rt, "web")
		require.Len(t, webRunning, 1)
		before, err := client.CoreV1().Pods("default").Get(context.Background(), "crash", metav1.GetOptions{})
		require.NoError(t, err)
		restartsOnline := before.Status.ContainerStatuses[0].RestartCount

		// The API server goes away; meanwhile job is deleted and new is
		// bound to the node. The agent restarts.
		down.Store(true)
		pods := v1.SchemeGroupVersion.WithResource("pods")
		require.NoError(t, client.Tracker().Delete(pods, "default", "job"))
		require.NoError(t, client.Tracker().Add(apiPod("default", "new", "u-new", "n1")))
		a, j, stop := runJoined(t, client, st, rt, root)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, "serving 3 pods from the local state since 2000-01-01T00:00:30Z: the API server has not answered",
			j.HealthCheck().Detail())
		for _, name := range []string{"web", "job", "crash"} {
			p := statusOf(a, name)
			require.NotNil(t, p, "pod %s served from the local state", name)
			assert.Equal(t, v1.PodRunning, p.Status.Phase, name)
		}
		restarts := statusOf(a, "crash").Status.ContainerStatuses[0].RestartCount
		assert.Greater(t, restarts, restartsOnline, "the crashing container is restarted while the server is away, its environment from the kept configMap and services")
		running, all := keptContainersOf(t, rt, "web")
		assert.Equal(t, webRunning, running, "web's container is adopted, not started again")
		assert.Len(t, all, 1)
		assert.Nil(t, statusOf(a, "new"), "nothing the node was not told of")

		// The server answers.
		// The reflector lists again within its backoff (at most 30s, with
		// as much jitter).
		down.Store(false)
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		assert.Empty(t, j.HealthCheck().Detail())
		running, _ = keptContainersOf(t, rt, "job")
		assert.Empty(t, running, "the pod deleted while the node was cut off is terminated")
		running, all = keptContainersOf(t, rt, "web")
		assert.Equal(t, webRunning, running, "web goes on with the same container")
		assert.Len(t, all, 1)
		running, _ = keptContainersOf(t, rt, "new")
		assert.Len(t, running, 1, "the pod bound meanwhile starts")
		got, err := client.CoreV1().Pods("default").Get(context.Background(), "new", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.PodRunning, got.Status.Phase)
		got, err = client.CoreV1().Pods("default").Get(context.Background(), "crash", metav1.GetOptions{})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, got.Status.ContainerStatuses[0].RestartCount, restarts, "the restarts made offline reach the server")
		kept, err = st.Pods()
		require.NoError(t, err)
		var names []string
		for _, p := range kept {
			names = append(names, p.Name)
		}
		assert.Equal(t, []string{"crash", "new", "web"}, names)
		stop()
	})
}
