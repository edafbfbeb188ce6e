//go:build envtest

package envnode_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// namespace creates a namespace named after prefix for the test.
func namespace(t *testing.T, client kubernetes.Interface, prefix string) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns.Name
}

// createDeployment creates a Deployment of replicas pods of spec, labelled
// app=name, for the replicas controller.
func createDeployment(t *testing.T, client kubernetes.Interface, ns, name string, replicas int32, spec v1.PodSpec) {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := client.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitPods watches the pods of ns until cond holds for them (sorted by
// name), and returns them; it fails the test when cond does not hold
// within wait. cond runs, in the watch's goroutine, on the pods as they
// are after each change, so that it sees every state the API server
// had, however briefly (a CrashLoopBackOff between two restarts).
func waitPods(t *testing.T, client kubernetes.Interface, ns, what string, cond func([]*v1.Pod) bool) []*v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var (
		store cache.Store
		last  []*v1.Pod // what cond last saw; read once the watch ended
		found = make(chan []*v1.Pod, 1)
	)
	check := func() {
		pods := make([]*v1.Pod, 0, len(store.List()))
		for _, o := range store.List() {
			pods = append(pods, o.(*v1.Pod).DeepCopy())
		}
		slices.SortFunc(pods, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
		last = pods
		if len(found) == 0 && cond(pods) {
			found <- pods
		}
	}
	store, ctl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return client.CoreV1().Pods(ns).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return client.CoreV1().Pods(ns).Watch(ctx, o)
			},
		},
		ObjectType: &v1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { check() }, UpdateFunc: func(any, any) { check() }, DeleteFunc: func(any) { check() },
		},
	})
	done := make(chan struct{})
	go func() { defer close(done); ctl.RunWithContext(ctx) }()
	select {
	case pods := <-found:
		cancel()
		<-done
		return pods
	case <-ctx.Done():
	}
	<-done
	var states []string
	for _, p := range last {
		states = append(states, describe(p))
	}
	t.Fatalf("%s: not within %s; pods of %s: %s", what, wait, ns, strings.Join(states, "; "))
	return nil
}

// describe is a pod's phase and container states, for failures.
func describe(p *v1.Pod) string {
	s := p.Name + " on " + p.Spec.NodeName + ": " + string(p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		s += " " + cs.Name + "="
		switch {
		case cs.State.Waiting != nil:
			s += "waiting:" + cs.State.Waiting.Reason
		case cs.State.Running != nil:
			s += "running"
		case cs.State.Terminated != nil:
			s += "terminated:" + cs.State.Terminated.Reason
		}
	}
	return s
}

func all(pods []*v1.Pod, f func(*v1.Pod) bool) bool {
	for _, p := range pods {
		if !f(p) {
			return false
		}
	}
	return true
}

func condition(p *v1.Pod, typ v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func waitingReason(cs v1.ContainerStatus) string {
	if cs.State.Waiting == nil {
		return ""
	}
	return cs.State.Waiting.Reason
}

// hookAndStop returns the runtime's ExecSync call of the preStop hook
// /bin/drain in the container of the status's containerID
// (runtime://id), and its StopContainer call; nil for a call not made.
func hookAndStop(rt *fake.Runtime, containerID string) (hook, stop *fake.Call) {
	_, id, _ := strings.Cut(containerID, "://")
	for _, c := range rt.CallsOf(fake.ExecSync) {
		if r := c.Request.(*runtimeapi.ExecSyncRequest); r.ContainerId == id && slices.Equal(r.Cmd, []string{"/bin/drain"}) && hook == nil {
			hook = &c
		}
	}
	for _, c := range rt.CallsOf(fake.StopContainer) {
		if r := c.Request.(*runtimeapi.StopContainerRequest); r.ContainerId == id && stop == nil {
			stop = &c
		}
	}
	return hook, stop
}
