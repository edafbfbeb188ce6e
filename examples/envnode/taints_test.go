package envnode_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/examples/envnode"
)

func TestConditionTaints(t *testing.T) {
	cond := func(typ v1.NodeConditionType, st v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: typ, Status: st}
	}
	noSchedule := func(keys ...string) []v1.Taint {
		out := []v1.Taint{}
		for _, k := range keys {
			out = append(out, v1.Taint{Key: k, Effect: v1.TaintEffectNoSchedule})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		conditions    []v1.NodeCondition
		unschedulable bool
		want          []v1.Taint
	}{
		{"no conditions yet", nil, false, noSchedule()},
		{"Ready", []v1.NodeCondition{cond(v1.NodeReady, v1.ConditionTrue), cond(v1.NodeMemoryPressure, v1.ConditionFalse)}, false, noSchedule()},
		{"not Ready", []v1.NodeCondition{cond(v1.NodeReady, v1.ConditionFalse)}, false, noSchedule(v1.TaintNodeNotReady)},
		{"unreachable", []v1.NodeCondition{cond(v1.NodeReady, v1.ConditionUnknown)}, false, noSchedule(v1.TaintNodeUnreachable)},
		{"every pressure, cordoned", []v1.NodeCondition{
			cond(v1.NodeReady, v1.ConditionTrue), cond(v1.NodeNetworkUnavailable, v1.ConditionTrue), cond(v1.NodePIDPressure, v1.ConditionTrue),
			cond(v1.NodeDiskPressure, v1.ConditionTrue), cond(v1.NodeMemoryPressure, v1.ConditionTrue),
		}, true, noSchedule(v1.TaintNodeMemoryPressure, v1.TaintNodeDiskPressure, v1.TaintNodePIDPressure, v1.TaintNodeNetworkUnavailable, v1.TaintNodeUnschedulable)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &v1.Node{Spec: v1.NodeSpec{Unschedulable: tc.unschedulable}, Status: v1.NodeStatus{Conditions: tc.conditions}}
			assert.Equal(t, tc.want, envnode.ConditionTaints(n))
		})
	}
}
