// Package devicestest provides a device plugin for tests: it serves the
// device plugin API on a unix socket, registers with a device manager
// (package devices, or upstream kubelet), lists devices whose health a test
// changes, records every call and fails the ones a test chooses.
//
// It is safe for concurrent use. Its limits: one resource per plugin,
// no topology, and Allocate answers from a function the test sets (by
// default, an environment variable naming the devices).
package devicestest
