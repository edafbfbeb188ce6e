// Command fakecri serves the in-memory fake CRI runtime of package cri/fake on
// a unix socket, so that crictl, critest or a real kubelet can talk to it.
//
//	go run ./examples/fakecri                       # the embedded default script
//	go run ./examples/fakecri --config my.yaml      # a script of your own
//	crictl --runtime-endpoint unix:///tmp/kubeletkit/fakecri.sock pods
//
// The script is a YAML (or JSON) file: the images present from the start,
// how containers behave (matched on image, name and command), exec results,
// what answers a port-forward, pull latency and failures, the cgroup
// driver RuntimeConfig reports (cgroupDriver: cgroupfs, systemd, or
// unimplemented as containerd 1.6 answers). default.yaml,
// embedded in the binary, is the annotated example.
//
// A streaming server on --streaming-listen (default 127.0.0.1:0, any free
// loopback port, as containerd's default) serves the URLs that Exec, Attach
// and PortForward return, so crictl exec, attach and port-forward work
// against fakecri (an empty address turns it off, and those calls fail as
// unimplemented):
//
//	crictl --runtime-endpoint unix:///tmp/kubeletkit/fakecri.sock exec -it CONTAINER sh
//	tar cf - file | crictl ... exec -i CONTAINER tar xmf - -C /tmp   # as kubectl cp does
//	crictl ... port-forward POD 8007:7                               # default.yaml echoes on 7
//
// What a command does inside a container is the fake's, not busybox's (see
// package cri/fake: echo, cat, sh -c and sh on stdin, test, mkdir, tar).
//
// The runtime runs on the real clock; its state changes and failed calls
// are logged (--quiet: only warnings), and Ctrl-C (SIGINT or SIGTERM) stops
// it gracefully.
package main
