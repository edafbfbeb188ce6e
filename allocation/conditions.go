package allocation

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditions are a pod's resize conditions, PodResizePending and
// PodResizeInProgress; nil is absent.
type conditions struct {
	pending, inProgress *v1.PodCondition
}

// set sets the condition of type t to c (nil removes it) and reports
// whether it changed: it came, went, or its reason or message changed. c
// gets the type, status True, and now as its probe time; its transition
// time is now unless the reason stays the same, as upstream's.
func (cs *conditions) set(t v1.PodConditionType, c *v1.PodCondition, now metav1.Time) bool {
	slot := &cs.pending
	if t == v1.PodResizeInProgress {
		slot = &cs.inProgress
	}
	old := *slot
	if c == nil {
		*slot = nil
		return old != nil
	}
	c.Type, c.Status = t, v1.ConditionTrue
	c.LastProbeTime, c.LastTransitionTime = now, now
	changed := old == nil || old.Reason != c.Reason || old.Message != c.Message
	if old != nil && old.Reason == c.Reason {
		c.LastTransitionTime = old.LastTransitionTime
	}
	*slot = c
	return changed
}

// get returns the condition of type t, or nil.
func (cs *conditions) get(t v1.PodConditionType) *v1.PodCondition {
	if cs == nil {
		return nil
	}
	if t == v1.PodResizeInProgress {
		return cs.inProgress
	}
	return cs.pending
}

// list returns copies of the conditions present, PodResizePending first.
func (cs *conditions) list() []v1.PodCondition {
	if cs == nil {
		return nil
	}
	var out []v1.PodCondition
	for _, c := range []*v1.PodCondition{cs.pending, cs.inProgress} {
		if c != nil {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}
