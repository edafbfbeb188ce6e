package agenttest_test

import (
	"flag"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

var scalePods = flag.Int("scale.pods", 100, "pods of TestScaleCrashLoop (docs/benchmarks.md runs 1000)")

// TestScaleCrashLoop is a node with many pods, each crash-looping, for ten
// minutes of the node's time: every pod walks the same back-off, and the
// test logs the wall time and the allocations it took. A benchmark cannot
// enter a synctest bubble, so this test is the benchmark: docs/benchmarks.md
// has the figures for -scale.pods=1000.
func TestScaleCrashLoop(t *testing.T) {
	pods := *scalePods
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{
			Agent: agent.Options{Node: agent.NodeOptions{Machine: nodetest.Machine{Cap: v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)}}}},
			Rules: []fake.Rule{{Command: []string{"false"}, Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1}}},
		})
		for i := range pods {
			n.AddPod(pod(fmt.Sprintf("crash-%04d", i), v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"false"}}))
		}
		n.Step(10 * time.Minute)
		restarts := map[int32]int{}
		for _, p := range n.Pods() {
			restarts[p.Status.ContainerStatuses[0].RestartCount]++
		}
		// Restarts at 1s, 11s, 31s, 71s, 151s, 311s; the one at 611s is
		// past the end.
		assert.Equal(t, map[int32]int{6: pods}, restarts)
	})
	wall := time.Since(start)
	runtime.ReadMemStats(&after)
	t.Logf("pods=%d: 10m of node time in %s of wall time, %d allocations, %d MB allocated",
		pods, wall.Round(time.Millisecond), after.Mallocs-before.Mallocs, (after.TotalAlloc-before.TotalAlloc)>>20)
}
