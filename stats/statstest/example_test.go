package statstest_test

import (
	"context"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/stats/statstest"
)

// A scripted node busy at 1.5 cores: its cumulative CPU time grows with
// the clock, from which a stats.Provider computes the rate.
func ExampleHost() {
	boot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(boot.Add(time.Minute))
	h := &statstest.Host{Clock: clk, BootTime: boot, NanoCores: 1_500_000_000, MemoryCapacity: 8 << 30, MemoryWorkingSet: 2 << 30}
	ns, _ := h.Node(context.Background(), true)
	fmt.Printf("cpu time %v, available memory %dGi\n", time.Duration(*ns.CPU.UsageCoreNanoSeconds), *ns.Memory.AvailableBytes>>30)
	clk.Step(time.Minute)
	ns, _ = h.Node(context.Background(), true)
	fmt.Printf("cpu time %v\n", time.Duration(*ns.CPU.UsageCoreNanoSeconds))
	fmt.Println(len(h.Calls()), "calls")
	// Output:
	// cpu time 1m30s, available memory 6Gi
	// cpu time 3m0s
	// 2 calls
}
