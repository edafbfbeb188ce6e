//go:build envtest

package envnode_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/envnode"
)

// The envtest scenarios start controller-runtime's envtest control plane
// (kube-apiserver and etcd from $KUBEBUILDER_ASSETS, which
// hack/envtest-assets.sh prints), two nodes and a controller written with
// controller-runtime, and watch what becomes of the controller's pods.
// Without KUBEBUILDER_ASSETS they fail, saying how to set it, rather than
// skip.

// leakIgnores: nothing outlives the test. envtest's processes, the
// nodes, the manager and the waits are stopped, and client-go's pooled
// connections to the API server end with it.
var leakIgnores []goleak.Option

// wait bounds each wait for a state of the API server. Most take a
// second or two, a crash loop on the fast timings 3s; the bound leaves
// room for a slow machine, never a sleep.
const wait = 30 * time.Second

func TestEnvtestController(t *testing.T) {
	logger := testLogger()
	ctrllog.SetLogger(logr.FromSlogHandler(logger.Handler()))
	cfg := startEnvtest(t)
	client := kubernetes.NewForConfigOrDie(cfg)

	// Node a: upstream's timings, the kubelet as it is by default.
	t0 := time.Now()
	a := startNode(t, cfg, envnode.Options{Name: "node-a", Logger: logger})
	t.Logf("node-a Ready %s after Start", time.Since(t0).Round(time.Millisecond))
	// Node b: a dedicated node, registered beforehand with a taint, as a
	// test that wants taints does (the node keeps them), on the fast
	// timings.
	_, err := client.CoreV1().Nodes().Create(context.Background(), &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{"pool": "b"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "b", Effect: v1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t0 = time.Now()
	b := startNode(t, cfg, envnode.Options{Name: "node-b", Logger: logger, Agent: agent.Options{Timings: envnode.FastTimings()}})
	t.Logf("node-b Ready %s after Start", time.Since(t0).Round(time.Millisecond))
	for _, n := range []*envnode.Node{a, b} {
		// A preStop hook that takes a second, and a registry without
		// example.invalid/missing.
		n.Runtime().SetExecRules([]fake.ExecRule{{Command: []string{"/bin/drain"}, Duration: time.Second}})
		n.Runtime().SetPullBehavior("example.invalid/missing:1", fake.PullBehavior{
			Err: fmt.Errorf("failed to resolve reference \"example.invalid/missing:1\": %w", cri.ErrNotFound)})
	}
	startManager(t, cfg, logger)

	t.Run("replicas run and turn Ready", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, client, "running")
		createDeployment(t, client, ns, "web", 3, v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1.27"}}})
		pods := waitPods(t, client, ns, "3 pods Running and Ready", func(pods []*v1.Pod) bool {
			return len(pods) == 3 && all(pods, func(p *v1.Pod) bool {
				return p.Status.Phase == v1.PodRunning && condition(p, v1.PodReady) == v1.ConditionTrue
			})
		})
		for _, p := range pods {
			// As upstream: scheduled by the binding, the node's
			// conditions, the container's state.
			for _, c := range []v1.PodConditionType{v1.PodScheduled, v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
				assert.Equal(t, v1.ConditionTrue, condition(p, c), "%s %s", p.Name, c)
			}
			assert.Equal(t, "node-a", p.Spec.NodeName, "untolerated taint of node-b")
			require.Len(t, p.Status.ContainerStatuses, 1)
			cs := p.Status.ContainerStatuses[0]
			assert.True(t, cs.Ready)
			assert.NotNil(t, cs.State.Running)
			assert.NotEmpty(t, p.Status.PodIP)
			assert.Equal(t, v1.PodQOSBestEffort, p.Status.QOSClass)
		}
	})

	t.Run("a crashing container shows CrashLoopBackOff", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, client, "crash")
		// The fake runtime's false exits 1 after 500ms. On node-b's fast
		// timings: with upstream's, the pod shows CrashLoopBackOff 12s to
		// 30s after it started (the sync after a failed one comes 10s to
		// 15s later; if the back-off has ended by then, the container
		// restarts instead, and the next back-off is twice as long).
		createDeployment(t, client, ns, "crasher", 1, onNodeB(v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"false"}}}}))
		pods := waitPods(t, client, ns, "CrashLoopBackOff with a restart", func(pods []*v1.Pod) bool {
			return len(pods) == 1 && len(pods[0].Status.ContainerStatuses) == 1 &&
				waitingReason(pods[0].Status.ContainerStatuses[0]) == "CrashLoopBackOff" && pods[0].Status.ContainerStatuses[0].RestartCount >= 1
		})
		cs := pods[0].Status.ContainerStatuses[0]
		assert.Regexp(t, `^back-off \d+s restarting failed container=app pod=crasher-`, cs.State.Waiting.Message)
		require.NotNil(t, cs.LastTerminationState.Terminated)
		assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
		assert.Equal(t, "Error", cs.LastTerminationState.Terminated.Reason)
		assert.Equal(t, v1.PodRunning, pods[0].Status.Phase)
		assert.Equal(t, v1.ConditionFalse, condition(pods[0], v1.PodReady))
	})

	t.Run("a deleted pod runs its preStop hook within its grace period", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, client, "prestop")
		grace := int64(5)
		createDeployment(t, client, ns, "stopper", 1, v1.PodSpec{
			NodeSelector:                  map[string]string{v1.LabelHostname: "node-a"},
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36",
				Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}}}},
		})
		old := waitPods(t, client, ns, "a Running pod", func(pods []*v1.Pod) bool {
			return len(pods) == 1 && pods[0].Status.Phase == v1.PodRunning
		})[0]
		containerID := old.Status.ContainerStatuses[0].ContainerID
		deleted := time.Now()
		require.NoError(t, client.CoreV1().Pods(ns).Delete(context.Background(), old.Name, metav1.DeleteOptions{}))
		// The controller replaces it at once; the old one goes once its
		// hook ran and its container stopped.
		waitPods(t, client, ns, "the old pod gone and a new one Running", func(pods []*v1.Pod) bool {
			return len(pods) == 1 && pods[0].UID != old.UID && pods[0].Status.Phase == v1.PodRunning
		})
		gone := time.Now()
		hook, stop := hookAndStop(a.Runtime(), containerID)
		require.NotNil(t, hook, "no preStop hook ran")
		require.NotNil(t, stop, "the container was not stopped")
		deadline := deleted.Add(time.Duration(grace) * time.Second)
		t.Logf("preStop %s after the deletion, container stopped %s after, pod gone %s after",
			hook.Time.Sub(deleted).Round(time.Millisecond), stop.Time.Sub(deleted).Round(time.Millisecond), gone.Sub(deleted).Round(time.Millisecond))
		assert.True(t, hook.Time.After(deleted) && hook.Time.Before(deadline), "hook at %s, deleted at %s", hook.Time, deleted)
		// The hook took its second; the container got the rest of the
		// grace period (SIGTERM, which kills it).
		assert.GreaterOrEqual(t, stop.Time.Sub(hook.Time), time.Second)
		assert.True(t, stop.Time.Before(deadline), "stopped at %s, past the grace period's end %s", stop.Time, deadline)
		assert.LessOrEqual(t, stop.Request.(*runtimeapi.StopContainerRequest).Timeout, grace-1)
	})

	t.Run("an image that cannot be pulled shows ErrImagePull then ImagePullBackOff", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, client, "pull")
		createDeployment(t, client, ns, "missing", 1, onNodeB(v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "example.invalid/missing:1"}}}))
		reasons := map[string]string{}
		pods := waitPods(t, client, ns, "ImagePullBackOff", func(pods []*v1.Pod) bool {
			if len(pods) != 1 || len(pods[0].Status.ContainerStatuses) != 1 {
				return false
			}
			cs := pods[0].Status.ContainerStatuses[0]
			if r := waitingReason(cs); r != "" {
				reasons[r] = cs.State.Waiting.Message
			}
			return waitingReason(cs) == "ImagePullBackOff"
		})
		assert.Contains(t, reasons["ErrImagePull"], "not found", "ErrImagePull first, with the registry's error")
		assert.Equal(t, `Back-off pulling image "example.invalid/missing:1": ErrImagePull: `+reasons["ErrImagePull"],
			pods[0].Status.ContainerStatuses[0].State.Waiting.Message)
		assert.Equal(t, v1.PodPending, pods[0].Status.Phase)
	})

	t.Run("a pod reads its configMap and service account token", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, client, "volumes")
		ctx := context.Background()
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
			Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		// envtest runs no controller-manager, so no namespace has a
		// default ServiceAccount: the test makes one.
		_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		expiry := int64(3600)
		// Ready only once both files are there: the fake runtime's test
		// reads the host files behind the container's mounts.
		_, err = client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Spec: v1.PodSpec{
			ServiceAccountName: "app",
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36",
				Env: []v1.EnvVar{{Name: "GREETING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "greeting"}}}},
				VolumeMounts: []v1.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "token", MountPath: "/var/run/token"}},
				ReadinessProbe: &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{
					Command: []string{"sh", "-c", "test -s /etc/config/greeting && test -s /var/run/token/token"}}}},
			}},
			Volumes: []v1.Volume{
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}}}},
				{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}}}}}},
			},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		waitPods(t, client, ns, "the reader Ready", func(pods []*v1.Pod) bool {
			return len(pods) == 1 && condition(pods[0], v1.PodReady) == v1.ConditionTrue
		})
	})

	t.Run("the binder honours node selectors and taints", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, client, "binder")
		onB := func(name string, tolerate bool) *v1.Pod {
			spec := onNodeB(v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.36"}}})
			if !tolerate {
				spec.Tolerations = nil
			}
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
			_, err := client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
			require.NoError(t, err)
			return p
		}
		// Created first, so every pass of node-b's binder that binds the
		// second one refuses it first.
		onB("intolerant", false)
		onB("tolerant", true)
		pods := waitPods(t, client, ns, "the tolerant pod Running on node-b", func(pods []*v1.Pod) bool {
			return slices.ContainsFunc(pods, func(p *v1.Pod) bool { return p.Name == "tolerant" && p.Status.Phase == v1.PodRunning })
		})
		for _, p := range pods {
			switch p.Name {
			case "tolerant":
				assert.Equal(t, "node-b", p.Spec.NodeName)
			case "intolerant":
				assert.Empty(t, p.Spec.NodeName, "bound although no node fits it")
				assert.Equal(t, v1.PodPending, p.Status.Phase)
			}
		}
	})
}

// onNodeB puts the pods of spec on node-b: its pool, and its taint
// tolerated.
func onNodeB(spec v1.PodSpec) v1.PodSpec {
	spec.NodeSelector = map[string]string{"pool": "b"}
	spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "b", Effect: v1.TaintEffectNoSchedule}}
	return spec
}

// testLogger logs at debug level to stderr with KK_DEBUG set, and
// discards otherwise.
func testLogger() *slog.Logger {
	if os.Getenv("KK_DEBUG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startEnvtest starts envtest's control plane, stopped when the test ends
// (even when it failed to start half-way).
func startEnvtest(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: set it to a directory holding kube-apiserver and etcd, " +
			"e.g. KUBEBUILDER_ASSETS=$(bash hack/envtest-assets.sh) (after hack/controlplane-setup.sh)")
	}
	env := &envtest.Environment{}
	t.Cleanup(func() { assert.NoError(t, env.Stop(), "stop envtest") })
	t0 := time.Now()
	cfg, err := env.Start()
	require.NoError(t, err, "start envtest")
	t.Logf("envtest started in %s", time.Since(t0).Round(time.Millisecond))
	return cfg
}

// startNode starts a node, stopped when the test ends.
func startNode(t *testing.T, cfg *rest.Config, opts envnode.Options) *envnode.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	n, err := envnode.Start(ctx, cfg, opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.Stop(), "stop node %s", n.Name()) })
	return n
}

// startManager runs a controller-runtime manager with the replicas
// controller until the test ends.
func startManager(t *testing.T, cfg *rest.Config, logger *slog.Logger) {
	t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"},
		Logger:  logr.FromSlogHandler(logger.Handler()),
	})
	require.NoError(t, err)
	require.NoError(t, (&replicas{}).setup(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "manager")
	})
}
