package envnode_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/envnode"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// bindLikeAPIServer makes client's pods/binding do what the API server's
// does: set the pod's node and its PodScheduled condition; a pod that has
// a node, or whose UID is not the binding's, is a Conflict.
func bindLikeAPIServer(client *fake.Clientset) {
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*v1.Binding)
		obj, err := client.Tracker().Get(podsResource, a.GetNamespace(), b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" || (b.UID != "" && b.UID != pod.UID) {
			return true, nil, apierrors.NewConflict(podsResource.GroupResource(), b.Name,
				fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
		return true, b, client.Tracker().Update(podsResource, pod, a.GetNamespace())
	})
}

// bindings are the pods/binding requests client received, as
// "namespace/pod->node".
func bindings(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if ca, ok := a.(k8stesting.CreateAction); ok && a.GetSubresource() == "binding" {
			b := ca.GetObject().(*v1.Binding)
			out = append(out, a.GetNamespace()+"/"+b.Name+"->"+b.Target.Name)
		}
	}
	return out
}

func testNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"disk": "ssd"}},
		Spec:       v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "ci", Effect: v1.TaintEffectNoSchedule}}},
	}
}

// testPod is a pod without a node, created at second age of a fixed day,
// tolerating node-1's taint.
func testPod(name string, age int, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, age, 0, time.UTC))},
		Spec: v1.PodSpec{SchedulerName: v1.DefaultSchedulerName, Containers: []v1.Container{{Name: "c", Image: "busybox"}},
			Tolerations: []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestBinderBindsPendingPodsThatFitOldestFirst(t *testing.T) {
	now := metav1.Now()
	client := fake.NewClientset(testNode(),
		testPod("late", 3),
		testPod("early", 1),
		testPod("wrong-disk", 0, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }),
		testPod("intolerant", 0, func(p *v1.Pod) { p.Spec.Tolerations = nil }),
		testPod("other-scheduler", 0, func(p *v1.Pod) { p.Spec.SchedulerName = "my-scheduler" }),
		testPod("gated", 0, func(p *v1.Pod) { p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}} }),
		testPod("deleting", 0, func(p *v1.Pod) { p.DeletionTimestamp = &now }),
		testPod("done", 0, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }),
		testPod("bound", 0, func(p *v1.Pod) { p.Spec.NodeName = "node-2" }),
	)
	bindLikeAPIServer(client)
	b, err := envnode.NewBinder(client, "node-1", envnode.BinderOptions{})
	require.NoError(t, err)

	n, err := b.BindPending(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"default/early->node-1", "default/late->node-1"}, bindings(client))
	for _, a := range client.Actions() {
		if ca, ok := a.(k8stesting.CreateAction); ok && a.GetSubresource() == "binding" {
			b := ca.GetObject().(*v1.Binding)
			assert.Equal(t, types.UID("uid-"+b.Name), b.UID, "the pod's UID is the binding's precondition")
			assert.Equal(t, "Node", b.Target.Kind)
		}
	}
	p, err := client.CoreV1().Pods("default").Get(context.Background(), "early", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "node-1", p.Spec.NodeName)

	// A second pass binds nothing more: the others still do not fit.
	client.ClearActions()
	n, err = b.BindPending(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Empty(t, bindings(client))
}

func TestBinderSchedulerName(t *testing.T) {
	client := fake.NewClientset(testNode(),
		testPod("default", 0),
		testPod("mine", 1, func(p *v1.Pod) { p.Spec.SchedulerName = "my-scheduler" }))
	bindLikeAPIServer(client)
	b, err := envnode.NewBinder(client, "node-1", envnode.BinderOptions{SchedulerName: "my-scheduler"})
	require.NoError(t, err)
	_, err = b.BindPending(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"default/mine->node-1"}, bindings(client))
}

func TestBinderTakesAConflictAsDoneAndReportsOtherFailures(t *testing.T) {
	client := fake.NewClientset(testNode(), testPod("raced", 0), testPod("gone", 1), testPod("refused", 2))
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		switch name := a.(k8stesting.CreateAction).GetObject().(*v1.Binding).Name; name {
		case "raced":
			return true, nil, apierrors.NewConflict(podsResource.GroupResource(), name, errors.New("already assigned"))
		case "gone":
			return true, nil, apierrors.NewNotFound(podsResource.GroupResource(), name)
		default:
			return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
		}
	})
	b, err := envnode.NewBinder(client, "node-1", envnode.BinderOptions{})
	require.NoError(t, err)
	n, err := b.BindPending(context.Background())
	assert.Zero(t, n)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bind pod default/refused to node-1")
	assert.NotContains(t, err.Error(), "raced")
	assert.NotContains(t, err.Error(), "gone")
}

func TestBinderBindPendingWithoutNode(t *testing.T) {
	b, err := envnode.NewBinder(fake.NewClientset(testPod("web", 0)), "node-1", envnode.BinderOptions{})
	require.NoError(t, err)
	_, err = b.BindPending(context.Background())
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestBinderRunFollowsPodsAndTheNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(testPod("before-the-node", 0))
		bindLikeAPIServer(client)
		b, err := envnode.NewBinder(client, "node-1", envnode.BinderOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		synctest.Wait()
		assert.Empty(t, bindings(client), "no node yet")

		// The node registers: the pod waiting for it is bound.
		_, err = client.CoreV1().Nodes().Create(ctx, testNode(), metav1.CreateOptions{})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []string{"default/before-the-node->node-1"}, bindings(client))

		// A new pod is bound; one that does not fit waits for the node
		// to change.
		client.ClearActions()
		_, err = client.CoreV1().Pods("default").Create(ctx, testPod("after", 1), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = client.CoreV1().Pods("default").Create(ctx, testPod("needs-hdd", 2, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }), metav1.CreateOptions{})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []string{"default/after->node-1"}, bindings(client))
		nd := testNode()
		nd.Labels["disk"] = "hdd"
		_, err = client.CoreV1().Nodes().Update(ctx, nd, metav1.UpdateOptions{})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []string{"default/after->node-1", "default/needs-hdd->node-1"}, bindings(client))

		cancel()
		require.NoError(t, <-done)
	})
}

func TestBinderRunRetriesAFailedBinding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(testNode(), testPod("web", 0))
		bindLikeAPIServer(client)
		failures := 2 // before bindLikeAPIServer's reactor, prepended
		client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "binding" && failures > 0 {
				failures--
				return true, nil, apierrors.NewServiceUnavailable("try later")
			}
			return false, nil, nil
		})
		b, err := envnode.NewBinder(client, "node-1", envnode.BinderOptions{RetryPeriod: 3 * time.Second})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		// Tried at once (once per initial list, which may come as one
		// change or two), then RetryPeriod after each failure, with no
		// change needed (the bubble's time): bound by the second period.
		start := time.Now()
		bound := func() bool {
			p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			return p.Spec.NodeName == "node-1"
		}
		for synctest.Wait(); !bound(); synctest.Wait() {
			require.Less(t, time.Since(start), 2*3*time.Second+time.Millisecond, "not bound after two retry periods")
			time.Sleep(time.Second)
		}
		assert.Len(t, bindings(client), 3, "two failures, then the binding")
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Len(t, bindings(client), 3, "no attempt once bound")
		cancel()
		require.NoError(t, <-done)
	})
}

func TestNewBinderRefusesWhatItCannotUse(t *testing.T) {
	client := fake.NewClientset()
	for name, f := range map[string]func() (*envnode.Binder, error){
		"nil client":   func() (*envnode.Binder, error) { return envnode.NewBinder(nil, "n", envnode.BinderOptions{}) },
		"no node name": func() (*envnode.Binder, error) { return envnode.NewBinder(client, "", envnode.BinderOptions{}) },
		"negative period": func() (*envnode.Binder, error) {
			return envnode.NewBinder(client, "n", envnode.BinderOptions{RetryPeriod: -1})
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f()
			assert.ErrorIs(t, err, envnode.ErrInvalidArgument)
		})
	}
}

func TestBinderRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := envnode.NewBinder(fake.NewClientset(), "node-1", envnode.BinderOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		synctest.Wait()
		assert.ErrorIs(t, b.Run(ctx), envnode.ErrInvalidArgument)
		cancel()
		require.NoError(t, <-done)
	})
}
