package nodetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

var podsResource = v1.SchemeGroupVersion.WithResource("pods")

// fakeAPI is what NewNode adds to client-go's object tracker for pods, so
// that both clients see an API server's semantics: admission on create,
// graceful deletion of a pod bound to a node, the UID preconditions of
// status patches and deletions, and writes that do not interleave (a patch
// is a read and a write of the tracker).
type fakeAPI struct {
	tracker   clienttesting.ObjectTracker
	admission *admission
	mu        sync.Mutex // held by every write of a pod
}

// install puts the pod and event rules in front of the clientset's
// tracker.
func (f *fakeAPI) install(cs *k8sfake.Clientset) {
	f.installEvents(cs)
	react := clienttesting.ObjectReaction(f.tracker)
	cs.PrependReactor("*", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			return false, nil, nil
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch x := a.(type) {
		case clienttesting.CreateAction:
			if p, ok := x.GetObject().(*v1.Pod); ok {
				f.admission.admit(p)
			}
		case clienttesting.PatchAction:
			var m struct {
				Metadata struct {
					UID types.UID `json:"uid"`
				} `json:"metadata"`
			}
			if json.Unmarshal(x.GetPatch(), &m) == nil {
				if err := f.checkUID(x.GetNamespace(), x.GetName(), m.Metadata.UID); err != nil {
					return true, nil, err
				}
			}
		case clienttesting.DeleteActionImpl:
			if x.GetSubresource() == "" {
				return true, nil, f.deleteLocked(x.GetNamespace(), x.GetName(), x.DeleteOptions)
			}
		}
		return react(a)
	})
}

// installEvents makes the names of events unique: client-go's recorder
// names an event after its object and the time in nanoseconds, which in a
// bubble is the same for every event of one instant, and the tracker
// would refuse all but the first.
func (f *fakeAPI) installEvents(cs *k8sfake.Clientset) {
	var seq int
	cs.PrependReactor("create", "events", func(a clienttesting.Action) (bool, runtime.Object, error) {
		e, ok := a.(clienttesting.CreateAction).GetObject().(*v1.Event)
		if !ok {
			return false, nil, nil
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		gvr := a.GetResource()
		if _, err := f.tracker.Get(gvr, e.Namespace, e.Name); err == nil {
			seq++
			e.Name = fmt.Sprintf("%s.%d", e.Name, seq)
		}
		if err := f.tracker.Create(gvr, e, e.Namespace); err != nil {
			return true, nil, err
		}
		return true, e.DeepCopy(), nil
	})
}

// interceptors are the controller-runtime client's: the same rules.
func (f *fakeAPI) interceptors() interceptor.Funcs {
	locked := func(fn func() error) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		return fn()
	}
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.CreateOption) error {
			return locked(func() error {
				if p, ok := obj.(*v1.Pod); ok {
					f.admission.admit(p)
				}
				return c.Create(ctx, obj, o...)
			})
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.DeleteOption) error {
			return locked(func() error {
				if _, ok := obj.(*v1.Pod); !ok {
					return c.Delete(ctx, obj, o...)
				}
				do := (&client.DeleteOptions{}).ApplyOptions(o)
				return f.deleteLocked(obj.GetNamespace(), obj.GetName(), *do.AsDeleteOptions())
			})
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, o ...client.UpdateOption) error {
			return locked(func() error { return c.Update(ctx, obj, o...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
			return locked(func() error { return c.Patch(ctx, obj, p, o...) })
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, o ...client.SubResourceUpdateOption) error {
			return locked(func() error { return c.SubResource(sub).Update(ctx, obj, o...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, o ...client.SubResourcePatchOption) error {
			return locked(func() error { return c.SubResource(sub).Patch(ctx, obj, p, o...) })
		},
	}
}

// checkUID fails with the API server's Conflict when uid is set and is not
// the stored pod's. A pod that is not there is left to the reaction, which
// answers NotFound.
func (f *fakeAPI) checkUID(namespace, name string, uid types.UID) error {
	if uid == "" {
		return nil
	}
	cur, err := f.tracker.Get(podsResource, namespace, name)
	if err != nil {
		return nil
	}
	if got := cur.(*v1.Pod).UID; got != uid {
		return apierrors.NewConflict(v1.Resource("pods"), name,
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, got))
	}
	return nil
}

// deleteLocked deletes a pod as the API server does: a pod bound to a node
// and not terminal gets a deletion timestamp and grace period (the
// options', else its own terminationGracePeriodSeconds), and is removed
// when its node deletes it with grace 0 once it has stopped; a pod already
// being deleted can only have its grace period shortened; any other is
// removed at once. A UID precondition that does not hold is a Conflict.
func (f *fakeAPI) deleteLocked(namespace, name string, o metav1.DeleteOptions) error {
	obj, err := f.tracker.Get(podsResource, namespace, name)
	if err != nil {
		return err
	}
	pod := obj.(*v1.Pod).DeepCopy()
	if pre := o.Preconditions; pre != nil && pre.UID != nil {
		if err := f.checkUID(namespace, name, *pre.UID); err != nil {
			return err
		}
	}
	grace := int64(validation.DefaultTerminationGracePeriodSeconds)
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if o.GracePeriodSeconds != nil {
		grace = *o.GracePeriodSeconds
	}
	terminal := pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
	if grace <= 0 || pod.Spec.NodeName == "" || terminal {
		return f.tracker.Delete(podsResource, namespace, name)
	}
	if cur := pod.DeletionGracePeriodSeconds; cur != nil && *cur <= grace {
		return nil // already being deleted, as soon or sooner
	}
	// The bubble's time, which the node keeps in step with its clock.
	at := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &at, &grace
	return f.tracker.Update(podsResource, pod, namespace)
}
