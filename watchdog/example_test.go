package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubeletkit/kubeletkit/watchdog"
)

// A unit with WatchdogSec=10s: the watchdog tells systemd at once, then
// every 5s, that the node is alive, as long as its checks pass; a timeout
// of a second is refused.
func Example() {
	syncLoop := func() error { return nil }
	checks := []watchdog.Check{{Name: "syncloop", Check: func() error { return syncLoop() }}}
	sent := make(chan string)
	w, err := watchdog.New(watchdog.Options{
		Timeout: 10 * time.Second, // watchdog.Enabled() under such a unit
		Checks:  checks,
		Notifier: watchdog.NotifierFunc(func(state string) (bool, error) {
			sent <- state // watchdog.Systemd{} sends it to NOTIFY_SOCKET
			return true, nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("interval", w.Interval())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	fmt.Println("sent", <-sent)
	cancel()
	fmt.Println("run:", <-done)

	// A tick notifies only when every check passes.
	syncLoop = func() error { return errors.New("sync loop took longer than expected") }
	fmt.Println(watchdog.Unhealthy(checks))

	_, err = watchdog.New(watchdog.Options{Timeout: time.Second})
	fmt.Println(err)
	// Output:
	// interval 5s
	// sent WATCHDOG=1
	// run: <nil>
	// checker syncloop failed: sync loop took longer than expected
	// configure watchdog timeout too small: 1s
}
