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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// that names a last good image is deleted and created again with that
// image.
type rollback struct{ c client.Client }

var _ reconcile.Reconciler = (*rollback)(nil)

// Reconcile rolls the pod back when it crash-loops.
func (r *rollback) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod v1.Pod
	if err := r.c.Get(ctx, req.NamespacedName, &pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	good := pod.Annotations[lastGood]
	if good == "" || !crashLooping(&pod) {
		return reconcile.Result{}, nil
	}
	if err := r.c.Delete(ctx, &pod); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	fresh := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels},
		Spec:       *pod.Spec.DeepCopy(),
	}
	for i := range fresh.Spec.Containers {
		fresh.Spec.Containers[i].Image = good
	}
	return reconcile.Result{}, r.c.Create(ctx, fresh)
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

// A pod whose new image crash-loops is rolled back by the controller, and
// the node runs the pod it created instead.
func TestRollbackReplacesCrashLoopingPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := newRollbackNode(t)
		first := n.CreatePod(webPod("registry.example/web:2"))
		require.NotNil(t, first)

		replaced := n.StepUntil(5*time.Minute, func() bool {
			p := n.Pod("default", "web")
			return p != nil && p.UID != first.UID && n.PodReady("default", "web")
		})
		require.True(t, replaced, "the crash-looping pod was not replaced by a ready one: %+v", n.Pod("default", "web"))

		p := n.Pod("default", "web")
		assert.Equal(t, "registry.example/web:1", p.Spec.Containers[0].Image)
		assert.Equal(t, v1.PodRunning, p.Status.Phase)
		assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount)
		assert.Empty(t, p.Annotations[lastGood], "the new pod is not rolled back again")

		// The first pod crashed until the kubelet backed off, as a
		// kubelet says it did.
		var reasons []string
		for _, e := range n.PodEvents("default", "web") {
			reasons = append(reasons, e.Reason)
		}
		assert.Contains(t, reasons, "BackOff")
		// The node stopped the first pod's container and runs one
		// container of the new pod.
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
		assert.Equal(t, p.UID, n.Pod("default", "web").UID)
		assert.True(t, n.PodReady("default", "web"))
	})
}
