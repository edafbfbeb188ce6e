package envnode

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// ConditionTaints returns the NoSchedule taints that upstream's node
// lifecycle controller (kube-controller-manager's TaintNodesByCondition)
// keeps on node for its conditions and spec, in this order:
//
//	Ready False               node.kubernetes.io/not-ready
//	Ready Unknown             node.kubernetes.io/unreachable
//	MemoryPressure True       node.kubernetes.io/memory-pressure
//	DiskPressure True         node.kubernetes.io/disk-pressure
//	PIDPressure True          node.kubernetes.io/pid-pressure
//	NetworkUnavailable True   node.kubernetes.io/network-unavailable
//	spec.unschedulable        node.kubernetes.io/unschedulable
//
// The API server puts node.kubernetes.io/not-ready on every Node it
// creates; the controller takes it away once the node reports Ready, so a
// Ready node has none of these taints.
func ConditionTaints(node *v1.Node) []v1.Taint {
	status := map[v1.NodeConditionType]v1.ConditionStatus{}
	for _, c := range node.Status.Conditions {
		status[c.Type] = c.Status
	}
	var keys []string
	switch status[v1.NodeReady] {
	case v1.ConditionFalse:
		keys = append(keys, v1.TaintNodeNotReady)
	case v1.ConditionUnknown:
		keys = append(keys, v1.TaintNodeUnreachable)
	}
	for _, c := range []struct {
		typ v1.NodeConditionType
		key string
	}{
		{v1.NodeMemoryPressure, v1.TaintNodeMemoryPressure},
		{v1.NodeDiskPressure, v1.TaintNodeDiskPressure},
		{v1.NodePIDPressure, v1.TaintNodePIDPressure},
		{v1.NodeNetworkUnavailable, v1.TaintNodeNetworkUnavailable},
	} {
		if status[c.typ] == v1.ConditionTrue {
			keys = append(keys, c.key)
		}
	}
	if node.Spec.Unschedulable {
		keys = append(keys, v1.TaintNodeUnschedulable)
	}
	taints := make([]v1.Taint, len(keys))
	for i, k := range keys {
		taints[i] = v1.Taint{Key: k, Effect: v1.TaintEffectNoSchedule}
	}
	return taints
}

// conditionTaint reports whether t is one of the taints ConditionTaints
// manages.
func conditionTaint(t v1.Taint) bool {
	if t.Effect != v1.TaintEffectNoSchedule {
		return false
	}
	switch t.Key {
	case v1.TaintNodeNotReady, v1.TaintNodeUnreachable, v1.TaintNodeMemoryPressure, v1.TaintNodeDiskPressure,
		v1.TaintNodePIDPressure, v1.TaintNodeNetworkUnavailable, v1.TaintNodeUnschedulable:
		return true
	}
	return false
}

// withConditionTaints returns node's taints with the managed ones as
// ConditionTaints says and the others as they are, and whether that
// differs from what node has. Taints are matched by key and effect, as
// upstream's controller matches them.
func withConditionTaints(node *v1.Node) ([]v1.Taint, bool) {
	want := ConditionTaints(node)
	out := make([]v1.Taint, 0, len(node.Spec.Taints)+len(want))
	changed := false
	for _, t := range node.Spec.Taints {
		if !conditionTaint(t) {
			out = append(out, t)
			continue
		}
		i := slices.IndexFunc(want, func(w v1.Taint) bool { return w.MatchTaint(&t) })
		if i < 0 {
			changed = true // no longer due
			continue
		}
		out = append(out, t)
		want = slices.Delete(want, i, i+1)
	}
	return append(out, want...), changed || len(want) > 0
}

// keepConditionTaints watches the Node nodeName and keeps its condition
// taints in step with its conditions, as the node lifecycle controller
// does, until ctx ends. A write that fails (a conflict with a status
// update) is tried again at the Node's next change.
func keepConditionTaints(ctx context.Context, client kubernetes.Interface, nodeName string, log *slog.Logger) error {
	_, ctl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: nodeListWatch(client, nodeName),
		ObjectType:    &v1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { setConditionTaints(ctx, client, obj, log) },
			UpdateFunc: func(_, obj any) { setConditionTaints(ctx, client, obj, log) },
		},
	})
	ctl.RunWithContext(ctx)
	return nil
}

// setConditionTaints writes the condition taints of the Node obj when they
// are not in step, with its resourceVersion as precondition.
func setConditionTaints(ctx context.Context, client kubernetes.Interface, obj any, log *slog.Logger) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	taints, changed := withConditionTaints(node)
	if !changed {
		return
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	})
	if err == nil {
		_, err = client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	switch {
	case err == nil:
		log.Info("Set the node's condition taints", "taints", fmt.Sprint(ConditionTaints(node)))
	case apierrors.IsConflict(err) || ctx.Err() != nil:
		// A newer Node is on its way.
	default:
		log.Warn("Cannot set the node's condition taints", "err", err)
	}
}
