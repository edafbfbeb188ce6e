package stats

import (
	"strings"
	"sync"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Keys of the CPU samples: one per container (by ID), per pod (by sandbox
// ID), per system container and the node.
const (
	nodeKey      = "node"
	systemKey    = "sys/"
	containerKey = "c/"
	sandboxKey   = "p/"
)

// cpuRates turns cumulative CPU usage into a rate, as upstream's CRI stats
// provider does for runtimes that report no usage_nano_cores: it keeps the
// last sample of each container, pod, system container and the node, and
// the rate computed when it was taken.
type cpuRates struct {
	period time.Duration // the shortest window between two samples

	mu sync.Mutex
	m  map[string]cpuSample
}

type cpuSample struct {
	at      time.Time
	usage   uint64 // cumulative nanoseconds of CPU
	rate    uint64 // nanocores, over the window that ended at `at`
	hasRate bool
}

func newCPURates(period time.Duration) *cpuRates {
	return &cpuRates{period: period, m: map[string]cpuSample{}}
}

// fill sets cpu.UsageNanoCores from the cumulative usage when the source
// left it nil: nil still at the first sample of key, after a counter that
// went back (a restarted cgroup), and until a window of at least the period
// has passed since.
func (r *cpuRates) fill(key string, cpu *statsv1alpha1.CPUStats) {
	if cpu == nil || cpu.UsageNanoCores != nil || cpu.UsageCoreNanoSeconds == nil {
		return
	}
	cpu.UsageNanoCores = r.rate(key, cpu.Time.Time, *cpu.UsageCoreNanoSeconds)
}

// rate records a sample of key and returns the rate to report with it.
func (r *cpuRates) rate(key string, at time.Time, usage uint64) *uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.m[key]
	if !ok || usage < last.usage || at.Before(last.at) {
		r.m[key] = cpuSample{at: at, usage: usage}
		return nil
	}
	window := at.Sub(last.at)
	if window <= 0 || window < r.period {
		if !last.hasRate {
			return nil
		}
		v := last.rate
		return &v
	}
	v := uint64(float64(usage-last.usage) / float64(window) * float64(time.Second))
	r.m[key] = cpuSample{at: at, usage: usage, rate: v, hasRate: true}
	return &v
}

// retain forgets the samples of the containers and pods not in seen (the
// node's and the system containers' are kept): called after each listing
// of every pod, it bounds the samples by what the node runs.
func (r *cpuRates) retain(seen map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if (strings.HasPrefix(k, containerKey) || strings.HasPrefix(k, sandboxKey)) && !seen[k] {
			delete(r.m, k)
		}
	}
}

func (r *cpuRates) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
