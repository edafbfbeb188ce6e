//go:build envtest

package envnode_test

// The example of docs/testing-controllers.md ("Pods that run in envtest"),
// as it is there: keep both in step.

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubeletkit/kubeletkit/examples/envnode"
)

func TestEnvtestGuide(t *testing.T) {
	// The control plane: kube-apiserver and etcd from $KUBEBUILDER_ASSETS.
	env := &envtest.Environment{}
	t.Cleanup(func() { _ = env.Stop() }) // registered first, so it runs last
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}

	// A node: a kubelet on a fake runtime, and a binder for the pods
	// that fit it. Start returns once the Node is Ready.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := envnode.Start(ctx, cfg, envnode.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Stop(); err != nil {
			t.Error(err)
		}
	})

	// The controller under test: a pod for each ConfigMap labelled
	// app=web, owned by it.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	c := mgr.GetClient()
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Owns(&corev1.Pod{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			if err := c.Get(ctx, req.NamespacedName, &cm); err != nil || cm.Labels["app"] != "web" {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			}
			if err := ctrl.SetControllerReference(&cm, pod, mgr.GetScheme()); err != nil {
				return reconcile.Result{}, err
			}
			if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopMgr := context.WithCancel(context.Background())
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() { stopMgr(); <-mgrDone })

	// The test: a ConfigMap in, a Ready pod out.
	clientset := kubernetes.NewForConfigOrDie(cfg)
	_, err = clientset.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "site", Labels: map[string]string{"app": "web"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw := cache.NewFilteredListWatchFromClient(clientset.CoreV1().RESTClient(), "pods", "default",
		func(o *metav1.ListOptions) { o.LabelSelector = "app=web" })
	_, err = watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(e watch.Event) (bool, error) {
		pod, ok := e.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				t.Logf("pod %s Ready on %s", pod.Name, pod.Spec.NodeName)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the pod did not turn Ready: %v", err)
	}
}
