package eviction_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/podspec"
)

func newMachine(t *testing.T, o eviction.MachineOptions) *eviction.Machine {
	t.Helper()
	m, err := eviction.NewMachine(o)
	require.NoError(t, err)
	return m
}

func TestNewMachineValidates(t *testing.T) {
	q := resource.MustParse("100Mi")
	cases := []struct {
		name string
		t    eviction.Threshold
		msg  string
	}{
		{"unknown signal", eviction.Threshold{Signal: "cpu.available", Value: eviction.ThresholdValue{Quantity: &q}}, `unsupported eviction signal "cpu.available"`},
		{"no value", eviction.Threshold{Signal: eviction.SignalMemoryAvailable}, "exactly one of quantity and percentage"},
		{"both values", eviction.Threshold{Signal: eviction.SignalMemoryAvailable, Value: eviction.ThresholdValue{Quantity: &q, Percentage: 0.1}}, "exactly one of quantity and percentage"},
		{"negative grace", eviction.Threshold{Signal: eviction.SignalMemoryAvailable, Value: eviction.ThresholdValue{Quantity: &q}, GracePeriod: -time.Second}, "negative grace period"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eviction.NewMachine(eviction.MachineOptions{Thresholds: []eviction.Threshold{tc.t}})
			require.ErrorIs(t, err, eviction.ErrInvalidThreshold)
			assert.ErrorContains(t, err, "new eviction machine: ")
			assert.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestMachineKeepsItsOwnThresholds(t *testing.T) {
	ts := mustParse(t, "memory.available<100Mi", "", "", "memory.available=50Mi")
	m := newMachine(t, eviction.MachineOptions{Thresholds: ts})
	ts[0].Value.Quantity.Set(1)
	ts[0].MinReclaim.Quantity.Set(1)
	got := m.Thresholds()
	assert.Equal(t, "100Mi", got[0].Value.Quantity.String())
	assert.Equal(t, "50Mi", got[0].MinReclaim.Quantity.String())
}

// TestDecideInputs covers what a caller may leave out of an Input: no stats
// function (no pod has stats), no observations (no signal, so no threshold
// is met), no pods (nothing to evict).
func TestDecideInputs(t *testing.T) {
	pods := []*v1.Pod{newPod("a"), newPod("b")}
	low := eviction.Observations{eviction.SignalMemoryAvailable: {Available: 10 * Mi, Capacity: 8 * Gi}}
	cases := []struct {
		name      string
		in        eviction.Input
		wantConds []v1.NodeConditionType
		wantEvict []string
	}{
		{name: "nil stats: first pod without stats", in: eviction.Input{Observations: low, Pods: pods}, wantConds: []v1.NodeConditionType{v1.NodeMemoryPressure}, wantEvict: []string{"a"}},
		{name: "no observations", in: eviction.Input{Pods: pods}},
		{name: "no pods", in: eviction.Input{Observations: low}, wantConds: []v1.NodeConditionType{v1.NodeMemoryPressure}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, eviction.MachineOptions{Thresholds: mustParse(t, "memory.available<100Mi", "", "", "")})
			tc.in.Now = t0
			d := m.Decide(tc.in)
			assert.Equal(t, tc.wantConds, d.Conditions)
			var got []string
			for _, e := range d.Evictions {
				got = append(got, e.Pod.Name)
			}
			assert.Equal(t, tc.wantEvict, got)
		})
	}
}

// TestReclaimed covers the end of a pass: a pass that asked for reclaim is
// ended once; a new Decide drops a pass still waiting.
func TestReclaimed(t *testing.T) {
	pods := []*v1.Pod{newPod("writer")}
	n := healthyNode()
	n.fsAvail, n.at = Gi, t0
	s := summary(n, podStats(pods[0], usage{logs: 5 * Gi}))
	full := eviction.Observe(&s)
	m := newMachine(t, eviction.MachineOptions{Thresholds: mustParse(t, "nodefs.available<10%", "", "", ""), ContainerGC: true})

	evictions, relieved := m.Reclaimed(full)
	assert.Empty(t, evictions, "no pass yet")
	assert.False(t, relieved)

	d := m.Decide(eviction.NewInput(t0, &s, pods))
	require.Equal(t, eviction.Reclaim{Containers: true}, d.Reclaim)
	assert.Empty(t, d.Evictions, "reclaim comes first")
	evictions, relieved = m.Reclaimed(full)
	require.Len(t, evictions, 1)
	assert.False(t, relieved)
	evictions, _ = m.Reclaimed(full)
	assert.Empty(t, evictions, "the pass has ended")

	s.Node.Fs.Time = t0.Add(10 * time.Second)
	m.Decide(eviction.NewInput(t0.Add(10*time.Second), &s, pods))
	m.Decide(eviction.NewInput(t0.Add(20*time.Second), &s, pods)) // stale: nothing acts
	evictions, _ = m.Reclaimed(full)
	assert.Empty(t, evictions, "the waiting pass was dropped")
}

func TestEvictionStatus(t *testing.T) {
	at := t0.Add(time.Minute)
	cond := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: "m"}
	cases := []struct {
		name string
		e    eviction.Eviction
		want v1.PodStatus
	}{
		{"pressure", eviction.Eviction{Message: "m", Condition: cond}, v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "m",
			Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: "m", LastTransitionTime: metav1.NewTime(at)}}}},
		{"local storage", eviction.Eviction{Message: "m"}, v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.e.Status(at))
		})
	}
	assert.True(t, cond.LastTransitionTime.IsZero(), "the decision's condition is not changed")
}

func TestAdmitUnderConditions(t *testing.T) {
	cases := []struct {
		name  string
		conds []v1.NodeConditionType
		pod   *v1.Pod
		admit bool
	}{
		{"no pressure", nil, newPod("be"), true},
		{"memory: besteffort", []v1.NodeConditionType{v1.NodeMemoryPressure}, newPod("be"), false},
		{"memory: burstable", []v1.NodeConditionType{v1.NodeMemoryPressure}, newPod("bu", request(v1.ResourceMemory, "1Mi")), true},
		{"pid: burstable", []v1.NodeConditionType{v1.NodePIDPressure}, newPod("bu", request(v1.ResourceMemory, "1Mi")), false},
		{"pid: critical", []v1.NodeConditionType{v1.NodePIDPressure}, newPod("c", priority(podspec.SystemCriticalPriority)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			admit, reason, _ := eviction.Admit(tc.conds, tc.pod)
			assert.Equal(t, tc.admit, admit)
			if !admit {
				assert.Equal(t, eviction.Reason, reason)
			}
		})
	}
}

func TestNewInput(t *testing.T) {
	n := healthyNode()
	n.dedicated = true
	p := newPod("a")
	s := summary(n, podStats(p, usage{memory: Mi}))
	in := eviction.NewInput(t0, &s, []*v1.Pod{p})
	assert.Equal(t, t0, in.Now)
	assert.True(t, in.DedicatedImageFs)
	assert.Equal(t, eviction.Observe(&s), in.Observations)
	ps, ok := in.Stats(p)
	require.True(t, ok)
	assert.Equal(t, uint64(Mi), ps.Memory.WorkingSetBytes)

	in = eviction.NewInput(t0, nil, nil)
	assert.Empty(t, in.Observations)
	_, ok = in.Stats(p)
	assert.False(t, ok)
}
