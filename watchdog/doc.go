// Package watchdog keeps systemd's service watchdog fed while the node is
// healthy, with upstream's semantics (pkg/kubelet/watchdog, the
// SystemdWatchdog feature, GA in 1.35).
//
// A unit with WatchdogSec= tells its main process the timeout in
// WATCHDOG_USEC (and its PID in WATCHDOG_PID); unless the process sends
// "WATCHDOG=1" to NOTIFY_SOCKET within every timeout, systemd kills it and
// applies the unit's Restart= policy. A kubelet whose sync loop is stuck is
// thereby restarted, not left half alive.
//
// # What it does
//
// Enabled reads the timeout from the environment, as upstream with
// github.com/coreos/go-systemd's SdWatchdogEnabled: zero when the unit has
// no watchdog or it is meant for another process, an error when the
// variables are malformed. New refuses a timeout of MinTimeout (1s) or
// less with ErrTimeoutTooSmall. Run then ticks every half timeout (the
// first tick at once, the next an interval after the previous one ended):
// each tick runs the Checks in order (upstream's are /healthz's: ping, log,
// syncloop and the server's others) and, when all pass, sends "WATCHDOG=1"
// through the Notifier. A failed check skips the tick with upstream's
// error log, "Do not notify watchdog this iteration as the kubelet is
// reportedly not healthy"; after two skipped ticks systemd's timeout runs
// out. A send that fails is tried once more RetryPeriod later; a Notifier
// that finds no socket (NOTIFY_SOCKET unset) is not retried. Both log
// "Failed to notify watchdog". Upstream jitters the retry by up to 10%;
// this package does not.
//
// Unhealthy is the tick's decision as a pure function: the first failing
// check, named ("checker syncloop failed: ...").
//
// # Driving it
//
//	timeout, err := watchdog.Enabled()
//	if err != nil {
//		return err // "configure watchdog: ..."
//	}
//	w, err := watchdog.New(watchdog.Options{Timeout: timeout, Checks: checks})
//	if err != nil {
//		return err
//	}
//	go w.Run(ctx) // returns at once when timeout is 0
//
// Package agent does this with agent.Options.Watchdog; examples/minikubelet
// sets it from the environment and also sends "READY=1" once the agent has
// started, as upstream's kubelet does after it has started.
//
// # Threading
//
// New starts no goroutine. Run blocks until ctx ends and returns only after
// everything it started has ended; it calls the checks and the Notifier
// from its own goroutine, one at a time. Time comes from Options.Clock.
// Tests drive the loop with testing/synctest or a fake clock, and
// NotifierFunc makes a fake Notifier a one-liner; Systemd against a unix
// datagram socket of the test's, named in NOTIFY_SOCKET, is the real one.
package watchdog
