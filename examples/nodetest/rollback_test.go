package nodetest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/examples/nodetest"
)

// lastGood names the image a pod goes back to when it crash-loops.
const lastGood = "example.com/last-good-image"

// rollback is the controller under test: a pod stuck in CrashLoopBackOff
// that names a last good image is replaced by a pod of that image (same
// labels, a generated name), then deleted.
type rollback struct{ c client.Client }

var _ reconcile.Reconciler = (*rollback)(nil)

// Reconcile rolls the pod back when it crash-loops.
func (r *rollback) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod v1.Pod
	if err := r.c.Get(ctx, req.NamespacedName, &pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	good := pod.Annotations[lastGood]
	if good == "" || pod.DeletionTimestamp != nil || !crashLooping(&pod) {
		return reconcile.Result{}, nil
	}
	fresh := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Labels["app"] + "-", Namespace: pod.Namespace, Labels: pod.Labels},
		Spec:       *pod.Spec.DeepCopy(),
	}
	fresh.Spec.NodeName = "" // the scheduler's to choose
	for i := range fresh.Spec.Containers {
		fresh.Spec.Containers[i].Image = good
	}
	if err := r.c.Create(ctx, fresh); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, client.IgnoreNotFound(r.c.Delete(ctx, &pod))
}

// crashLooping reports whether a container of pod waits in
// CrashLoopBackOff.
func crashLooping(pod *v1.Pod) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			return true
		}
	}
	return false
}

func webPod(image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{lastGood: "registry.example/web:1"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: image}}},
	}
}

// webPods returns the pods labelled app=web.
func webPods(t *testing.T, n *nodetest.Node) []v1.Pod {
	var l v1.PodList
	require.NoError(t, n.Client.List(context.Background(), &l, client.MatchingLabels{"app": "web"}))
	return l.Items
}

// newRollbackNode starts a node where registry.example/web:2 crashes at
// once and :1 runs, with the rollback controller watching its pods through
// a controller-runtime controller on the node's shared informers.
func newRollbackNode(t *testing.T) *nodetest.Node {
	n := nodetest.NewNode(t, nodetest.Options{Node: agenttest.Options{Rules: []fake.Rule{{
		Image:    "registry.example/web:2",
		Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1},
	}}}})
	c, err := controller.NewTypedUnmanaged("rollback", controller.Options{
		Reconciler:         &rollback{c: n.Client},
		SkipNameValidation: ptr.To(true), // made again by each run of -count
		Logger:             logr.Discard(),
	})
	require.NoError(t, err)
	require.NoError(t, c.Watch(&source.Informer{
		Informer: n.Informers.Core().V1().Pods().Informer(),
		Handler:  &handler.EnqueueRequestForObject{},
	}))
	n.Start(c)
	return n
}

// A pod whose new image crash-loops is rolled back by the controller: the
// node runs the pod it created instead, and the first one is gone.
func TestRollbackReplacesCrashLoopingPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRollbackNode(t)
		first := n.CreatePod(webPod("registry.example/web:2"))
		require.NotNil(t, first)

		replaced := n.StepUntil(5*time.Minute, func() bool {
			pods := webPods(t, n)
			return len(pods) == 1 && pods[0].UID != first.UID && agenttest.IsReady(&pods[0])
		})
		require.True(t, replaced, "the crash-looping pod was not replaced by a ready one: %v", webPods(t, n))

		p := webPods(t, n)[0]
		assert.Equal(t, "web-00002", p.Name, "the generated name")
		assert.Equal(t, "registry.example/web:1", p.Spec.Containers[0].Image)
		assert.Equal(t, v1.PodRunning, p.Status.Phase)
		assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount)
		assert.Empty(t, p.Annotations[lastGood], "the new pod is not rolled back again")

		// The first pod crashed until the node backed off.
		var reasons []string
		for _, e := range n.PodEvents("default", "web") {
			reasons = append(reasons, e.Reason)
		}
		assert.Contains(t, reasons, "BackOff")
		assert.Nil(t, n.Pod("default", "web"), "the first pod is gone")
		// One container runs: the new pod's.
		running := 0
		for _, c := range n.Runtime().Containers() {
			if c.GetState().String() == "CONTAINER_RUNNING" {
				running++
				assert.Equal(t, string(p.UID), c.GetLabels()["io.kubernetes.pod.uid"])
			}
		}
		assert.Equal(t, 1, running)

		// Nothing more happens: the new pod stays.
		n.Step(5 * time.Minute)
		pods := webPods(t, n)
		require.Len(t, pods, 1)
		assert.Equal(t, p.UID, pods[0].UID)
		assert.True(t, agenttest.IsReady(&pods[0]))
	})
}
