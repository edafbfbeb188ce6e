// Command fakecri serves the in-memory fake CRI runtime of package cri/fake on
// a unix socket, so that crictl, critest or a real kubelet can talk to it.
//
//	go run ./examples/fakecri                       # the embedded default script
//	go run ./examples/fakecri --config my.yaml      # a script of your own
//	crictl --runtime-endpoint unix:///tmp/kubeletkit/fakecri.sock pods
//
// The script is a YAML (or JSON) file: the images present from the start,
// how containers behave (matched on image, name and command), ExecSync
// results, pull latency and failures. default.yaml, embedded in the binary,
// is the annotated example. The runtime runs on the real clock; its state changes
// and failed calls are logged (--quiet: only warnings), and Ctrl-C (SIGINT or SIGTERM) stops it gracefully.
package main
