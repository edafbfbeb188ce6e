package agenttest_test

import (
	"fmt"
	"time"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
)

// An Event as Node.Events returns it, printed as a transcript line. A node
// itself needs a synctest bubble, which an Example cannot enter: see
// guide_test.go and docs/testing-controllers.md for a whole test.
func ExampleEvent() {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	e := agenttest.Event{
		Time:    start.Add(12 * time.Second),
		Object:  "Pod default/crash",
		Type:    "Warning",
		Reason:  "BackOff",
		Message: "Back-off restarting failed container app in pod crash_default(uid)",
	}
	fmt.Printf("%5.1fs %s\n", e.Time.Sub(start).Seconds(), e)
	// Output:
	//  12.0s Pod default/crash Warning BackOff Back-off restarting failed container app in pod crash_default(uid)
}
