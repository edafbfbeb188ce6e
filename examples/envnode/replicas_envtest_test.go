//go:build envtest

package envnode_test

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// replicas is the controller under test: a tiny ReplicaSet written with
// controller-runtime. It keeps spec.replicas pods of each Deployment's
// template running, owned by the Deployment (envtest runs no
// controller-manager, so nothing else acts on a Deployment). Pods being
// deleted or finished do not count, so a deleted pod is replaced at once.
type replicas struct {
	client.Client
}

// setup registers the controller with mgr: it reconciles Deployments and
// the pods they own.
func (r *replicas) setup(mgr ctrl.Manager) error {
	r.Client = mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Owns(&v1.Pod{}).
		Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *replicas) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d appsv1.Deployment
	if err := r.Get(ctx, req.NamespacedName, &d); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return ctrl.Result{}, fmt.Errorf("deployment %s: selector: %v", req, err)
	}
	var list v1.PodList
	if err := r.List(ctx, &list, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return ctrl.Result{}, err
	}
	var live []*v1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if metav1.IsControlledBy(p, &d) && p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			live = append(live, p)
		}
	}
	want := 1
	if d.Spec.Replicas != nil {
		want = int(*d.Spec.Replicas)
	}
	for i := len(live); i < want; i++ {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name + "-", Namespace: d.Namespace, Labels: labels.Merge(d.Spec.Template.Labels, nil)},
			Spec:       *d.Spec.Template.Spec.DeepCopy(),
		}
		if err := controllerutil.SetControllerReference(&d, p, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, p); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Too many: the newest go first.
	slices.SortFunc(live, func(a, b *v1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for i := 0; i < len(live)-want; i++ {
		if err := r.Delete(ctx, live[i]); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}
