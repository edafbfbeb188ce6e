package main

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"fly"},
		{"nodes"}, // no kubeconfig
		{"nodes", "--kubeconfig", "k", "--nodes", "0"}, // no nodes
		{"load", "--kubeconfig", "k", "--probes", "4"},
		{"load", "--kubeconfig", "k", "--rate", "0"},
		{"heartbeat", "--kubeconfig", "k", "--for", "0s"},
		{"clean", "--kubeconfig", "k", "--node-name-prefix", ""},
		{"nodes", "extra"},
	} {
		var out, errs bytes.Buffer
		assert.Error(t, run(context.Background(), args, &out, &errs), "%v", args)
	}
}

func TestPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(101-i)*time.Millisecond)
	}
	got := percentiles(d)
	assert.Equal(t, dist{n: 100, min: time.Millisecond, p50: 50 * time.Millisecond, p90: 90 * time.Millisecond,
		p99: 99 * time.Millisecond, max: 100 * time.Millisecond}, got)
	assert.Equal(t, "p50 50ms, p90 90ms, p99 99ms (min 1ms, max 100ms, n=100)", got.String())
	one := percentiles([]time.Duration{time.Second})
	assert.Equal(t, time.Second, one.p50)
	assert.Equal(t, time.Second, one.p99)
	assert.Equal(t, "no samples", percentiles(nil).String())
}

func TestLoadPod(t *testing.T) {
	c := loadConfig{namespace: "default", image: "pause", probes: 3}
	p := loadPod(c, "r1", "hollow-0003", 7)
	assert.Equal(t, "load-r1-00007", p.Name)
	assert.Equal(t, "hollow-0003", p.Spec.NodeName)
	assert.Equal(t, "r1", p.Labels[runLabel])
	ctr := p.Spec.Containers[0]
	require.NotNil(t, ctr.ReadinessProbe)
	require.NotNil(t, ctr.LivenessProbe)
	require.NotNil(t, ctr.StartupProbe)
	assert.Equal(t, []string{"true"}, ctr.ReadinessProbe.Exec.Command)
	c.probes = 1
	ctr = loadPod(c, "r1", "n", 0).Spec.Containers[0]
	assert.NotNil(t, ctr.ReadinessProbe)
	assert.Nil(t, ctr.LivenessProbe)
	assert.Nil(t, ctr.StartupProbe)
	assert.Equal(t, []string{"hollow-0000", "hollow-0001"}, nodeNames("hollow-", 2))
}

func TestTracker(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	tr := newTracker(2)
	pod := func(name string, phase v1.PodPhase, ready v1.ConditionStatus) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.PodStatus{Phase: phase,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready}}}}
	}
	tr.created("a", t0)
	tr.created("b", t0.Add(time.Second))
	tr.observe(pod("a", v1.PodPending, v1.ConditionFalse), t0.Add(100*time.Millisecond))
	tr.observe(pod("a", v1.PodRunning, v1.ConditionFalse), t0.Add(300*time.Millisecond))
	tr.observe(pod("a", v1.PodRunning, v1.ConditionTrue), t0.Add(2*time.Second))
	tr.observe(pod("a", v1.PodRunning, v1.ConditionTrue), t0.Add(5*time.Second)) // a later update changes nothing
	tr.observe(pod("b", v1.PodRunning, v1.ConditionFalse), t0.Add(1500*time.Millisecond))
	s := tr.summary()
	assert.Equal(t, 2, s.running)
	assert.Equal(t, 1, s.ready)
	assert.Equal(t, 300*time.Millisecond, s.toRunning.min)
	assert.Equal(t, 500*time.Millisecond, s.toRunning.max)
	assert.Equal(t, 2*time.Second, s.toReady.p99)
	assert.Equal(t, "b", tr.notReady(5))
	select {
	case <-tr.allReady:
		t.Fatal("all ready with one of two")
	default:
	}
	tr.observe(pod("b", v1.PodRunning, v1.ConditionTrue), t0.Add(3*time.Second))
	<-tr.allReady
}

func TestLeaseAge(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	renew := metav1.NewMicroTime(now.Add(-7 * time.Second))
	l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &renew}}
	assert.Equal(t, 7*time.Second, leaseAge(l, now))
	l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}}
	assert.Equal(t, time.Minute, leaseAge(l, now))
}

// clean deletes the load's pods again while the API server answers a
// timeout (it goes on deleting), and stops on any other error.
func TestIsTimeout(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err  error
		want bool
	}{
		{apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 0), true},
		{apierrors.NewServerTimeout(gr, "delete", 1), true},
		{apierrors.NewNotFound(gr, "p"), false},
		{errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, isTimeout(tt.err), "%v", tt.err)
	}
}
