package envnode

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// nodeListWatch lists and watches the Node nodeName alone.
func nodeListWatch(client kubernetes.Interface, nodeName string) cache.ListerWatcher {
	selector := fields.OneTermEqualSelector("metadata.name", nodeName).String()
	return listWatch(client, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = selector
		return client.CoreV1().Nodes().List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = selector
		return client.CoreV1().Nodes().Watch(ctx, o)
	})
}

// pendingSelector selects the pods without a node that have not finished,
// as upstream's scheduler watches them.
func pendingSelector() string {
	return fields.AndSelectors(
		fields.OneTermEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(v1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(v1.PodFailed)),
	).String()
}

// pendingPodsListWatch lists and watches the pods of every namespace that
// pendingSelector selects.
func pendingPodsListWatch(client kubernetes.Interface) cache.ListerWatcher {
	selector := pendingSelector()
	return listWatch(client, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		o.FieldSelector = selector
		return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = selector
		return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
	})
}

// listWatch is a lister-watcher of list and watch that a fake clientset
// can serve too: it says it cannot stream the initial list, and the
// reflector lists.
func listWatch(client kubernetes.Interface, list cache.ListWithContextFunc, w cache.WatchFuncWithContext) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: w}, client)
}
