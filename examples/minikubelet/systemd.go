package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/watchdog"
)

// watchdogOptions sets the agent's watchdog from the environment systemd
// gives a unit with WatchdogSec= (WATCHDOG_USEC, WATCHDOG_PID), as
// upstream's kubelet: a malformed one, or a timeout of a second or less,
// is an error. --runonce feeds no watchdog, as upstream's.
func watchdogOptions(c *config, opts *agent.Options) error {
	if c.runOnce {
		return nil
	}
	timeout, err := watchdog.Enabled()
	if err != nil {
		return err
	}
	opts.Watchdog.Timeout = timeout
	return nil
}

// notifyReady tells systemd that the node has started ("READY=1", which a
// Type=notify unit waits for) once the agent has, as upstream's kubelet
// does once it runs; without NOTIFY_SOCKET it sends nothing. The returned
// function waits until its goroutine has ended, which ctx's end brings.
func notifyReady(ctx context.Context, a *agent.Agent, n watchdog.Notifier, log *slog.Logger) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-a.Ready():
			if _, err := n.Notify(watchdog.StateReady); err != nil {
				log.Error("Failed to notify systemd", "state", watchdog.StateReady, "err", err)
			}
		}
	})
	return wg.Wait
}
