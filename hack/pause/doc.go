// Command pause is a minimal pod-sandbox "pause" process for the local
// integration-test images built by hack/containerd-setup.sh.
//
// It blocks until it receives SIGTERM or SIGINT and then exits 0. While it
// waits it reaps any zombie children that get re-parented to it (it is PID 1
// of the pod's PID namespace when the pod shares one). It uses only the
// standard library and is meant to be built with CGO_ENABLED=0 so the
// resulting binary is fully static and can run from an otherwise empty image.
//
// hack/containerd-setup.sh builds main.go alone, copied into a private
// module, so the program's code must stay in main.go; this file holds only
// the package comment.
package main
