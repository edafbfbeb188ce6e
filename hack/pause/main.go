// Command pause is a minimal pod-sandbox "pause" process for the local
// integration-test images built by hack/containerd-setup.sh.
//
// It blocks until it receives SIGTERM or SIGINT and then exits 0. While it
// waits it reaps any zombie children that get re-parented to it (it is PID 1
// of the pod's PID namespace when the pod shares one). It uses only the
// standard library and is meant to be built with CGO_ENABLED=0 so the
// resulting binary is fully static and can run from an otherwise empty image.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("kubeletkit-pause 1")
		return
	}

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)

	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			fmt.Fprintf(os.Stderr, "pause: got %v, exiting\n", sig)
			os.Exit(0)
		}
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
