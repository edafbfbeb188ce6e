package stats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestCPURates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u := func(v uint64) *uint64 { return &v }
	steps := []struct {
		at    time.Duration
		usage time.Duration // cumulative CPU time
		want  *uint64       // nanocores
		why   string
	}{
		{0, 0, nil, "first sample: no rate yet"},
		{5 * time.Second, time.Second, nil, "window shorter than the period"},
		{10 * time.Second, 2 * time.Second, u(200_000_000), "2s of CPU in 10s"},
		{15 * time.Second, 3 * time.Second, u(200_000_000), "too soon: the last rate"},
		{20 * time.Second, 5 * time.Second, u(300_000_000), "3s in the 10s since the last sample"},
		{20 * time.Second, 5 * time.Second, u(300_000_000), "the same sample again"},
		{30 * time.Second, time.Second, nil, "the counter went back: a new cgroup"},
		{25 * time.Second, 2 * time.Second, nil, "a sample older than the last: start over"},
		{40 * time.Second, 6 * time.Second, u(266_666_666), "4s in 15s"},
	}
	r := newCPURates(10 * time.Second)
	for _, s := range steps {
		got := r.rate("c/x", t0.Add(s.at), uint64(s.usage))
		assert.Equal(t, s.want, got, "%v: %s", s.at, s.why)
	}

	every := newCPURates(-1)
	assert.Nil(t, every.rate("n", t0, 0))
	assert.Equal(t, u(1_000_000_000), every.rate("n", t0.Add(time.Millisecond), uint64(time.Millisecond)), "no period: every sample")

	// fill keeps what the source reported, and needs a cumulative figure.
	cpu := &statsv1alpha1.CPUStats{Time: metav1.NewTime(t0), UsageNanoCores: u(7), UsageCoreNanoSeconds: u(1)}
	every.fill("k", cpu)
	assert.Equal(t, u(7), cpu.UsageNanoCores)
	cpu = &statsv1alpha1.CPUStats{Time: metav1.NewTime(t0)}
	every.fill("k", cpu)
	assert.Nil(t, cpu.UsageNanoCores)
	every.fill("k", nil)

	// Containers and pods not seen are forgotten; the node is kept.
	r.rate(containerKey+"gone", t0, 0)
	r.rate(sandboxKey+"gone", t0, 0)
	r.rate(nodeKey, t0, 0)
	r.rate(systemKey+"pods", t0, 0)
	r.retain(map[string]bool{"c/x": true})
	assert.Equal(t, 3, r.len(), "c/x, the node, the pods system container")
}
