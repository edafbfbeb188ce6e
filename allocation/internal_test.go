package allocation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConditionsSet(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	deferred := func(msg string) *v1.PodCondition {
		return &v1.PodCondition{Reason: v1.PodReasonDeferred, Message: msg}
	}
	for _, tc := range []struct {
		name        string
		old         *v1.PodCondition // PodResizePending at t0
		set         *v1.PodCondition // at t1
		changed     bool
		transition  metav1.Time // of the result
		wantPresent bool
	}{
		{name: "absent, removed", changed: false},
		{name: "comes", set: deferred("a"), changed: true, transition: t1, wantPresent: true},
		{name: "goes", old: deferred("a"), changed: true},
		{name: "same reason and message", old: deferred("a"), set: deferred("a"), changed: false, transition: t0, wantPresent: true},
		{name: "new message, same reason", old: deferred("a"), set: deferred("b"), changed: true, transition: t0, wantPresent: true},
		{name: "new reason", old: deferred("a"), set: &v1.PodCondition{Reason: v1.PodReasonInfeasible, Message: "a"}, changed: true, transition: t1, wantPresent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cs conditions
			if tc.old != nil {
				cs.set(v1.PodResizePending, tc.old, t0)
			}
			assert.Equal(t, tc.changed, cs.set(v1.PodResizePending, tc.set, t1))
			got := cs.get(v1.PodResizePending)
			if !tc.wantPresent {
				assert.Nil(t, got)
				assert.Empty(t, cs.list())
				return
			}
			assert.Equal(t, v1.ConditionTrue, got.Status)
			assert.Equal(t, v1.PodResizePending, got.Type)
			assert.Equal(t, t1, got.LastProbeTime, "probed now")
			assert.Equal(t, tc.transition, got.LastTransitionTime)
			assert.Nil(t, cs.get(v1.PodResizeInProgress), "the other condition is left alone")
			assert.Len(t, cs.list(), 1)
		})
	}
}

func TestRetryOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prio := func(n int32) *int32 { return &n }
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}
	guaranteed := v1.ResourceRequirements{Requests: rl, Limits: rl}
	pod := func(name string, p *int32, g bool) *v1.Pod {
		pod := &v1.Pod{Spec: v1.PodSpec{Priority: p, Containers: []v1.Container{{Name: "app"}}}}
		pod.Name = name
		if g {
			pod.Spec.Containers[0].Resources = guaranteed
		}
		return pod
	}
	for _, tc := range []struct {
		name string
		in   []retryCandidate
		want []string
	}{
		{name: "asks no more first", in: []retryCandidate{
			{pod: pod("grows", prio(100), true), grows: true},
			{pod: pod("same", nil, false)},
		}, want: []string{"same", "grows"}},
		{name: "then priority", in: []retryCandidate{
			{pod: pod("low", nil, true), grows: true},
			{pod: pod("high", prio(10), false), grows: true},
		}, want: []string{"high", "low"}},
		{name: "then Guaranteed", in: []retryCandidate{
			{pod: pod("besteffort", nil, false), since: t0},
			{pod: pod("guaranteed", nil, true), since: t0.Add(time.Hour)},
		}, want: []string{"guaranteed", "besteffort"}},
		{name: "then the longest waiting", in: []retryCandidate{
			{pod: pod("later", nil, false), since: t0.Add(time.Second)},
			{pod: pod("first", nil, false), since: t0},
		}, want: []string{"first", "later"}},
		{name: "stable among equals", in: []retryCandidate{
			{pod: pod("a", nil, false)}, {pod: pod("b", nil, false)}, {pod: pod("c", nil, false)},
		}, want: []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retryOrder(tc.in)
			var got []string
			for _, c := range tc.in {
				got = append(got, c.pod.Name)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
