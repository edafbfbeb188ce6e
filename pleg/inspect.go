package pleg

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri"
)

// InspectPod reads one pod's status from the runtime now and stores it in
// the Cache, stamped with the time the inspection began, as a relist stores
// the pods it inspects; it returns that status. It is the on-demand half of
// the PLEG, for a caller that cannot wait up to a relist period: a pod worker
// that has just started or killed containers, or one whose pod must act on a
// failed probe. name and namespace fill the status's fields; the pod is found
// by uid alone.
//
// InspectPod delivers no event: the next relist compares the runtime with
// what it has delivered before and reports the changes it finds, whoever has
// inspected the pod since. An inspection that fails is stored as the pod's
// error, as a relist stores it, and returned.
func (g *Generic) InspectPod(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error) {
	return g.r.inspectNow(ctx, uid, name, namespace)
}

// InspectPod reads one pod's status from the runtime now and stores it in
// the Cache, as Generic.InspectPod does.
func (e *Evented) InspectPod(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error) {
	return e.r.inspectNow(ctx, uid, name, namespace)
}

// inspectNow is InspectPod for either PLEG.
func (r *relister) inspectNow(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error) {
	var err error
	status, ok := r.store(ctx, uid, r.clock.Now(), func(ctx context.Context) (*cri.PodStatus, error) {
		var st *cri.PodStatus
		st, err = cri.GetPodStatus(ctx, r.rt, uid, name, namespace)
		return st, err
	})
	if !ok {
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return status, nil
}
