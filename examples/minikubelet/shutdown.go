package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/nodeshutdown/logind"
)

// shutdownSignals are the signals --shutdown-signal may name.
var shutdownSignals = map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP,
	"SIGQUIT": syscall.SIGQUIT, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2}

// shutdownOptions gives graceful node shutdown (upstream's
// shutdownGracePeriod and shutdownGracePeriodCriticalPods, in opts from
// the configuration) its trigger: systemd-logind as
// upstream's (nothing happens where there is no logind), or by
// --shutdown-signal instead.
func shutdownOptions(c *config, opts *agent.Options) error {
	grace := opts.Shutdown.GracePeriod
	if c.shutdownSignal == "" {
		if grace > 0 {
			t, err := logind.New(logind.Options{GracePeriod: grace, Logger: opts.Logger.With("component", "logind")})
			if err != nil {
				return err
			}
			opts.Shutdown.Trigger = t
		}
		return nil
	}
	name := strings.ToUpper(c.shutdownSignal)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig, ok := shutdownSignals[name]
	if !ok {
		return fmt.Errorf("--shutdown-signal=%s: must be one of SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2", c.shutdownSignal)
	}
	if grace == 0 && len(opts.Shutdown.ByPodPriority) == 0 {
		return fmt.Errorf("--shutdown-signal=%s needs --shutdown-grace-period: without it a shutdown does nothing", c.shutdownSignal)
	}
	opts.Shutdown.Trigger = &nodeshutdown.Signal{Signals: []os.Signal{sig}}
	return nil
}

// stopSignals are the signals that stop minikubelet (containers left
// running): SIGINT and SIGTERM, but for the one trigger takes.
func stopSignals(trigger nodeshutdown.Trigger) []os.Signal {
	var taken os.Signal
	if s, ok := trigger.(*nodeshutdown.Signal); ok && len(s.Signals) == 1 {
		taken = s.Signals[0]
	}
	var out []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		if s != taken {
			out = append(out, s)
		}
	}
	return out
}

// shutdownDrain is how long minikubelet runs on once a shutdown has
// terminated the pods, so that their final statuses reach the API server
// (the status manager writes them asynchronously), as a machine takes a
// moment to halt after upstream's kubelet releases its inhibitor lock.
const shutdownDrain = 2 * time.Second

// exitAfterShutdown runs the agent until ctx ends, or until shutdownDrain
// after a shutdown has terminated the node's pods.
func exitAfterShutdown(a *agent.Agent, run func(context.Context) error, stdout io.Writer) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			select {
			case <-a.ShutdownDone():
			case <-ctx.Done():
				return
			}
			t := time.NewTimer(shutdownDrain)
			defer t.Stop()
			select {
			case <-t.C:
				fmt.Fprintln(stdout, "minikubelet: the node shut down; exiting")
				cancel()
			case <-ctx.Done():
			}
		}()
		err := run(ctx)
		cancel()
		<-stopped
		return err
	}
}
