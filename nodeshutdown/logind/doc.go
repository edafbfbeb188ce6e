// Package logind is a nodeshutdown.Trigger on systemd-logind, upstream
// kubelet's trigger (pkg/kubelet/nodeshutdown/systemd): over the system
// D-Bus it holds a delay inhibitor lock on shutdown ("kubeletkit needs time
// to handle node shutdown"), raises logind's InhibitDelayMaxSec to the
// node's grace period when it is shorter (a drop-in in
// /etc/systemd/logind.conf.d, then SIGHUP to logind through systemd, as
// upstream), and on PrepareForShutdown(true) runs the handler's Shutdown
// and then releases the lock, so that the machine goes on shutting down
// once the pods are down; PrepareForShutdown(false) cancels the shutdown
// and takes the lock again.
//
//	t, err := logind.New(logind.Options{GracePeriod: m.GracePeriod()})
//	agent.Options{Shutdown: agent.ShutdownOptions{GracePeriod: 30 * time.Second, Trigger: t}}
//
// Run returns nil at once, after logging why, where there is no system bus
// or no logind (as upstream's kubelet, which then shuts down without
// grace); when the bus goes away later it watches again a second later.
//
// Its tests with -tags dbus run a private dbus-daemon (Debian's
// dbus-daemon package; .ci/run installs it) with a fake logind and systemd
// on it.
package logind
