package envnode

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestWithConditionTaints(t *testing.T) {
	ready := []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	notReady := []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	dedicated := v1.Taint{Key: "dedicated", Value: "ci", Effect: v1.TaintEffectNoSchedule}
	// Another effect of a managed key is left alone, as upstream's
	// NoExecute taints belong to taint-based eviction.
	notReadyExecute := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}
	notReadySchedule := v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name        string
		conditions  []v1.NodeCondition
		taints      []v1.Taint
		want        []v1.Taint
		wantChanged bool
	}{
		{"a new Node turns Ready: its not-ready taint goes", ready, []v1.Taint{dedicated, notReadySchedule},
			[]v1.Taint{dedicated}, true},
		{"Ready and untainted: in step", ready, []v1.Taint{dedicated, notReadyExecute},
			[]v1.Taint{dedicated, notReadyExecute}, false},
		{"not Ready: tainted", notReady, []v1.Taint{dedicated},
			[]v1.Taint{dedicated, notReadySchedule}, true},
		{"not Ready and tainted: in step", notReady, []v1.Taint{notReadySchedule, dedicated},
			[]v1.Taint{notReadySchedule, dedicated}, false},
		{"taints match by key and effect", notReady, []v1.Taint{{Key: v1.TaintNodeNotReady, Value: "x", Effect: v1.TaintEffectNoSchedule}},
			[]v1.Taint{{Key: v1.TaintNodeNotReady, Value: "x", Effect: v1.TaintEffectNoSchedule}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &v1.Node{Spec: v1.NodeSpec{Taints: tc.taints}, Status: v1.NodeStatus{Conditions: tc.conditions}}
			got, changed := withConditionTaints(n)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantChanged, changed)
		})
	}
}

func TestKeepConditionTaints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Created as the API server creates a Node: not-ready, no
		// conditions yet.
		nd := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
			Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: "dedicated", Value: "ci", Effect: v1.TaintEffectNoSchedule},
				{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}}}}
		client := fake.NewClientset(nd)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- keepConditionTaints(ctx, client, "node-1", slog.New(slog.DiscardHandler)) }()
		taints := func() []v1.Taint {
			synctest.Wait()
			got, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
			require.NoError(t, err)
			return got.Spec.Taints
		}
		// No Ready condition yet: upstream's controller takes the taint
		// away too, as the conditions call for none.
		assert.Equal(t, []v1.Taint{{Key: "dedicated", Value: "ci", Effect: v1.TaintEffectNoSchedule}}, taints())

		setReady := func(st v1.ConditionStatus) {
			cur, err := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
			require.NoError(t, err)
			cur.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: st}}
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
		setReady(v1.ConditionFalse)
		assert.Equal(t, []v1.Taint{{Key: "dedicated", Value: "ci", Effect: v1.TaintEffectNoSchedule},
			{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}}, taints())
		setReady(v1.ConditionTrue)
		assert.Equal(t, []v1.Taint{{Key: "dedicated", Value: "ci", Effect: v1.TaintEffectNoSchedule}}, taints())

		cancel()
		require.NoError(t, <-done)
	})
}
