package vkprovider_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
	"github.com/kubeletkit/kubeletkit/status/statustest"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

func TestPodRunsAndTurnsReady(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	pod := newPod("web", "nginx:1.27")
	require.NoError(t, e.p.CreatePod(ctx, pod))

	got := e.waitPod("web", running)
	assert.Equal(t, pod.UID, got.UID)
	assert.Equal(t, hostIP, got.Status.HostIP)
	assert.NotEmpty(t, got.Status.PodIP)
	assert.Equal(t, v1.PodQOSBestEffort, got.Status.QOSClass)
	for _, c := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		assert.Equal(t, v1.ConditionTrue, condition(got, c), "condition %s", c)
	}
	require.Len(t, got.Status.ContainerStatuses, 1)
	cs := got.Status.ContainerStatuses[0]
	assert.NotNil(t, cs.State.Running)
	assert.True(t, cs.Ready)
	assert.Regexp(t, `^kubeletkit-fake://`, cs.ContainerID)

	// VK reads back what it was told.
	stored, err := e.p.GetPod(ctx, "default", "web")
	require.NoError(t, err)
	assert.Equal(t, v1.PodRunning, stored.Status.Phase)
	st, err := e.p.GetPodStatus(ctx, "default", "web")
	require.NoError(t, err)
	assert.Equal(t, v1.PodRunning, st.Phase)
	pods, err := e.p.GetPods(ctx)
	require.NoError(t, err)
	require.Len(t, pods, 1)
	assert.Equal(t, "web", pods[0].Name)

	// An update of the image restarts the container with it, as upstream.
	updated := pod.DeepCopy()
	updated.Spec.Containers[0].Image = "nginx:1.28"
	require.NoError(t, e.p.UpdatePod(ctx, updated))
	got = e.waitPod("web", func(p *v1.Pod) bool {
		return running(p) && p.Status.ContainerStatuses[0].Image == "docker.io/library/nginx:1.28"
	})
	assert.Equal(t, int32(1), got.Status.ContainerStatuses[0].RestartCount)
}

func TestCrashLoopBackOff(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	pod := newPod("crash", "busybox")
	pod.Spec.Containers[0].Command = []string{"false"} // exits 1 after 500ms
	require.NoError(t, e.p.CreatePod(context.Background(), pod))

	got := e.waitPod("crash", func(p *v1.Pod) bool {
		return waitingReason(p) == "CrashLoopBackOff" && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	cs := got.Status.ContainerStatuses[0]
	assert.Contains(t, cs.State.Waiting.Message, "back-off")
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
	assert.Equal(t, "Error", cs.LastTerminationState.Terminated.Reason)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)
	assert.Equal(t, v1.ConditionFalse, condition(got, v1.PodReady))
}

func TestImagePullFailure(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	const image = "registry.example/missing:1"
	e.p.Agent().FakeRuntime().SetPullBehavior(image, fake.PullBehavior{Err: errors.New("manifest unknown")})
	require.NoError(t, e.p.CreatePod(context.Background(), newPod("nopull", image)))

	got := e.waitPod("nopull", func(p *v1.Pod) bool { return waitingReason(p) == "ErrImagePull" })
	assert.Contains(t, got.Status.ContainerStatuses[0].State.Waiting.Message, "manifest unknown")
	assert.Equal(t, v1.PodPending, got.Status.Phase)
	got = e.waitPod("nopull", func(p *v1.Pod) bool { return waitingReason(p) == "ImagePullBackOff" })
	assert.Contains(t, got.Status.ContainerStatuses[0].State.Waiting.Message, "Back-off pulling image")
}

func TestGracefulDelete(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	// The container takes 2s to exit on SIGTERM: time for VK's second call.
	e.p.Agent().FakeRuntime().SetRules([]fake.Rule{{Image: "slow-stop",
		Behavior: fake.Behavior{OnSIGTERM: fake.ExitOnSIGTERM, ShutdownTime: 2 * time.Second}}})
	pod := newPod("graceful", "slow-stop")
	preStop := []string{"echo", "bye"}
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: preStop}}}
	require.NoError(t, e.p.CreatePod(ctx, pod))
	e.waitPod("graceful", running)

	// VK: the pod got a deletion timestamp.
	require.NoError(t, e.p.DeletePod(ctx, deleting(pod, 30)))
	// VK calls again when the grace period is shortened.
	deleted := deleting(pod, 20)
	require.NoError(t, e.p.DeletePod(ctx, deleted))

	got := e.waitPod("graceful", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	term := got.Status.ContainerStatuses[0].State.Terminated
	assert.Equal(t, int32(0), term.ExitCode, "exited on SIGTERM")
	assert.Equal(t, "Completed", term.Reason)
	assert.NotNil(t, got.DeletionTimestamp, "VK sees the pod it deletes")
	assert.Equal(t, int64(20), *got.DeletionGracePeriodSeconds, "the shortened grace period")
	e.waitPod("graceful", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })

	execs := e.p.Agent().FakeRuntime().CallsOf(fake.ExecSync)
	assert.True(t, slices.ContainsFunc(execs, func(c fake.Call) bool {
		return slices.Equal(c.Request.(*runtimeapi.ExecSyncRequest).GetCmd(), preStop)
	}), "the preStop hook ran")

	// Finished and deleted, the pod leaves the provider; VK's last call
	// (after it removed the pod from the API server) finds nothing.
	require.Eventually(t, func() bool {
		_, err := e.p.GetPod(ctx, "default", "graceful")
		return errdefs.IsNotFound(err)
	}, wait, 10*time.Millisecond)
	err := e.p.DeletePod(ctx, deleted)
	assert.True(t, errdefs.IsNotFound(err), "%v", err)
}

func TestDeletePodTwiceRemoves(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	// The container takes 3s to exit on SIGTERM, so that the pod still
	// terminates when VK deletes it again, on a loaded machine too (one
	// that died at once was sometimes gone before GetPod).
	e.p.Agent().FakeRuntime().SetRules([]fake.Rule{{Image: "slow-stop",
		Behavior: fake.Behavior{OnSIGTERM: fake.ExitOnSIGTERM, ShutdownTime: 3 * time.Second}}})
	pod := newPod("removed", "slow-stop")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To(int64(30))
	require.NoError(t, e.p.CreatePod(ctx, pod))
	e.waitPod("removed", running)

	require.NoError(t, e.p.DeletePod(ctx, deleting(pod, 30)))
	// VK, once the pod left the API server, deletes what GetPod returns.
	stored, err := e.p.GetPod(ctx, "default", "removed")
	require.NoError(t, err)
	require.NoError(t, e.p.DeletePod(ctx, stored))
	_, err = e.p.GetPod(ctx, "default", "removed")
	assert.True(t, errdefs.IsNotFound(err))
	assert.ErrorIs(t, err, vkprovider.ErrPodNotFound)

	// The agent kills what runs (the runtime's container stops).
	rt := e.p.Agent().FakeRuntime()
	require.Eventually(t, func() bool {
		for _, c := range rt.Containers() {
			if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false
			}
		}
		return true
	}, wait, 10*time.Millisecond)
}

func TestAdmissionRejections(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	windows := newPod("windows", "nginx:1.27")
	windows.Spec.OS = &v1.PodOS{Name: v1.Windows}
	sysctl := newPod("sysctl", "nginx:1.27")
	sysctl.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "1"}}}
	for _, p := range []*v1.Pod{windows, sysctl} {
		require.NoError(t, e.p.CreatePod(ctx, p), "a pod the agent refuses is no error for VK")
	}
	for name, want := range map[string]struct{ reason, message string }{
		"windows": {admission.ReasonPodOSNotSupported, "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"},
		"sysctl":  {admission.ReasonSysctlForbidden, "Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted"},
	} {
		got := e.waitPod(name, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
		assert.Equal(t, want.reason, got.Status.Reason, name)
		assert.Equal(t, want.message, got.Status.Message, name)
	}
}

func TestHangingBackendStallsNoOtherPod(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	rt := e.p.Agent().FakeRuntime()
	// The next sandbox, the stuck pod's, hangs until the agent stops.
	rt.InjectFault(fake.RunPodSandbox, fake.Fault{Hang: true, Times: 1})
	require.NoError(t, e.p.CreatePod(ctx, newPod("stuck", "nginx:1.27")))
	require.Eventually(t, func() bool { return len(rt.CallsOf(fake.RunPodSandbox)) == 1 }, wait, 10*time.Millisecond)

	require.NoError(t, e.p.CreatePod(ctx, newPod("fine", "nginx:1.27")))
	e.waitPod("fine", running)
	if stuck := e.last("stuck"); stuck != nil {
		assert.Equal(t, v1.PodPending, stuck.Status.Phase)
	}
	// VK's calls about the stuck pod return at once (the deletion cancels
	// the hanging call, and the pod may be gone already).
	require.NoError(t, e.p.DeletePod(ctx, deleting(newPod("stuck", "nginx:1.27"), 30)))
	_, err := e.p.GetPod(ctx, "default", "stuck")
	assert.True(t, err == nil || errdefs.IsNotFound(err), "%v", err)
}

func TestBlockingCallbackBlocksNoAgent(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	release := make(chan struct{})
	blocked := make(chan struct{}, 1)
	e.mu.Lock()
	e.block = func(p *v1.Pod) {
		if p.Name == "a" {
			select {
			case blocked <- struct{}{}:
			default:
			}
			<-release
		}
	}
	e.mu.Unlock()
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	require.NoError(t, e.p.CreatePod(ctx, newPod("a", "nginx:1.27")))
	select {
	case <-blocked:
	case <-time.After(wait):
		t.Fatal("the callback was never called for pod a")
	}
	// While VK's callback for a blocks, b runs and VK hears of it, and the
	// agent runs a too.
	require.NoError(t, e.p.CreatePod(ctx, newPod("b", "nginx:1.27")))
	e.waitPod("b", running)
	require.Eventually(t, func() bool {
		for _, p := range e.p.Agent().PodStatuses() {
			if p.Name == "a" && running(&p) {
				return true
			}
		}
		return false
	}, wait, 10*time.Millisecond)
	// Released, the callback gets a's latest status.
	close(release)
	e.waitPod("a", running)
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	ctx := context.Background()
	_, err := e.p.GetPod(ctx, "default", "nope")
	assert.True(t, errdefs.IsNotFound(err))
	assert.ErrorIs(t, err, vkprovider.ErrPodNotFound)
	_, err = e.p.GetPodStatus(ctx, "default", "nope")
	assert.True(t, errdefs.IsNotFound(err))
	assert.True(t, errdefs.IsNotFound(e.p.DeletePod(ctx, newPod("nope"))))
	_, err = e.p.GetContainerLogs(ctx, "default", "nope", "c0", api.ContainerLogOpts{})
	assert.True(t, errdefs.IsNotFound(err))
	assert.True(t, errdefs.IsInvalidInput(e.p.CreatePod(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-uid"}})))
}

func TestNodeStatusAndPing(t *testing.T) {
	t.Parallel()
	opts := testOptions(t)
	opts.Node = &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{v1.LabelHostname: nodeName}},
		Status: v1.NodeStatus{
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
			Conditions:      []v1.NodeCondition{{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse}, {Type: "Empty"}},
		},
	}
	opts.Agent.NodeName = ""
	e := start(t, opts)
	require.NoError(t, e.p.Ping(context.Background()))
	e.until("a Ready node", func() bool {
		return len(e.nodes) > 0 && nodeCondition(e.nodes[len(e.nodes)-1], v1.NodeReady) == v1.ConditionTrue
	})
	e.mu.Lock()
	n := e.nodes[len(e.nodes)-1]
	e.mu.Unlock()
	assert.Equal(t, nodeName, n.Name)
	assert.Equal(t, nodeName, n.Labels[v1.LabelHostname])
	assert.Equal(t, int32(10250), n.Status.DaemonEndpoints.KubeletEndpoint.Port, "VK serves the kubelet API")
	assert.Equal(t, node.ReasonKubeletReady, nodeConditionReason(n, v1.NodeReady))
	assert.Equal(t, v1.ConditionFalse, nodeCondition(n, v1.NodeNetworkUnavailable), "kept from VK's node")
	assert.Equal(t, v1.ConditionStatus(""), nodeCondition(n, "Empty"), "a condition without a status is dropped")
	assert.Equal(t, v1.ConditionFalse, nodeCondition(n, v1.NodeMemoryPressure))
	assert.NotEmpty(t, n.Status.Capacity.Pods())
	assert.Contains(t, n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: hostIP})
	assert.Regexp(t, `^kubeletkit-fake://`, n.Status.NodeInfo.ContainerRuntimeVersion)
	got, ok := e.p.Node()
	require.True(t, ok)
	assert.Equal(t, nodeName, got.Name)
}

func nodeCondition(n *v1.Node, t v1.NodeConditionType) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func nodeConditionReason(n *v1.Node, t v1.NodeConditionType) string {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Reason
		}
	}
	return ""
}

func TestNewRefusesTheProvidersOptions(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*vkprovider.Options){
		"updates":     func(o *vkprovider.Options) { o.Agent.Cluster.Updates = make(chan syncloop.PodUpdate) },
		"status sink": func(o *vkprovider.Options) { o.Agent.Cluster.StatusSink = &statustest.Sink{} },
		"node sink": func(o *vkprovider.Options) {
			o.Agent.Cluster.NodeStatusSink = node.StatusSinkFunc(func(context.Context, string, v1.NodeStatus) error { return nil })
		},
		"leases":    func(o *vkprovider.Options) { o.Agent.Cluster.Leases = &nodetest.Sink{} },
		"node name": func(o *vkprovider.Options) { o.Node = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}} },
	} {
		t.Run(name, func(t *testing.T) {
			o := testOptions(t)
			edit(&o)
			_, err := vkprovider.New(o)
			assert.ErrorIs(t, err, vkprovider.ErrInvalidOptions)
		})
	}
}

func TestRunOnce(t *testing.T) {
	t.Parallel()
	e := start(t, testOptions(t))
	err := e.p.Run(context.Background())
	assert.ErrorIs(t, err, vkprovider.ErrNotRunning)
}

// TestReadinessGate: with VK's pod lister, a readiness gate's condition
// that another writer sets in the API server reaches the agent, and the
// pod turns Ready, as under upstream kubelet.
func TestReadinessGate(t *testing.T) {
	t.Parallel()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	opts := testOptions(t)
	opts.Pods = corev1listers.NewPodLister(store)
	e := start(t, opts)
	ctx := context.Background()
	const gate = v1.PodConditionType("example.com/load-balancer")
	pod := newPod("gated", "nginx:1.27")
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}}
	require.NoError(t, store.Add(pod))
	require.NoError(t, e.p.CreatePod(ctx, pod))
	_, err := e.p.GetPods(ctx) // VK's first call, once its informer synced
	require.NoError(t, err)

	got := e.waitPod("gated", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && condition(p, v1.ContainersReady) == v1.ConditionTrue
	})
	assert.Equal(t, v1.ConditionFalse, condition(got, v1.PodReady))

	// The load balancer's controller sets the gate in the API server.
	api := got.DeepCopy()
	api.Status.Conditions = append(api.Status.Conditions, v1.PodCondition{Type: gate, Status: v1.ConditionTrue})
	require.NoError(t, store.Update(api))
	got = e.waitPod("gated", running)
	assert.Equal(t, v1.ConditionTrue, condition(got, gate), "the gate's condition is kept")

	// And takes it back.
	api = got.DeepCopy()
	for i := range api.Status.Conditions {
		if api.Status.Conditions[i].Type == gate {
			api.Status.Conditions[i].Status = v1.ConditionFalse
		}
	}
	require.NoError(t, store.Update(api))
	e.waitPod("gated", func(p *v1.Pod) bool {
		return condition(p, gate) == v1.ConditionFalse && condition(p, v1.PodReady) == v1.ConditionFalse
	})
}
