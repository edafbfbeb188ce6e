// Command bench times a kubelet from a fresh start to its static pods
// running, through a quiet steady state, one added pod and the deletion of
// every pod, and prints two kubelets' results side by side
// (hack/bench-startup.sh runs upstream kubelet and minikubelet this way on
// examples/fakecri and on containerd).
//
//	bench manifests --dir run/manifests --n 100 --extra run/extra/bench-extra.yaml
//	bench run --agent upstream --runtime fakecri --n 100 --url http://127.0.0.1:P/pods \
//	    --cri unix:///run/fakecri.sock --manifests run/manifests --extra run/extra/bench-extra.yaml \
//	    --steady 60s --pidfile run/agent.pid --log run/agent.log --out up.json -- kubelet ...
//	bench clean --cri unix:///run/containerd.sock
//	bench table up.json mini.json ...
//
// manifests writes N static pods named bench-0001, bench-0002, ... of one
// busybox container that sleeps and exits 0 at once on SIGTERM, and the
// manifest of one more pod, bench-extra, outside the directory.
//
// run starts the command (the clock starts right before the fork, with the
// manifests already in place), and from then:
//   - reads the kubelet's /pods until every pod is Running: when the first
//     one was, when all were, the kubelet's CPU time (utime+stime of
//     /proc/PID/stat) and its peak resident memory (VmHWM of
//     /proc/PID/status) at that moment;
//   - lets it run for --steady without asking it anything, reading VmRSS
//     every second: the CPU time it used and its resident memory at the end;
//   - moves the extra manifest into the directory (a rename, so a kubelet
//     never reads half a file) and times the pod to Running and to Ready;
//   - removes every manifest and times the pods' removal from /pods and the
//     last of their containers to stop running, asking the runtime over CRI
//     (ListContainers) for running containers of pods named bench-;
//   - stops the kubelet (SIGTERM, SIGKILL after 20s) and writes a JSON
//     result, with the machine's load average at the start and the end.
//
// /pods is polled at most every 10ms until the first pod runs and every
// 50ms afterwards, and no sooner than three times what the last request and
// its decoding took after it, so that the harness takes a bounded share of
// the cores it shares with the kubelet; but never more than 200ms after the
// last answer. A sample is dated when its
// answer arrived: each time is an upper bound, late by at most the gap to
// the sample before it (the result keeps each such gap, and the widest as
// resolution).
//
// clean stops and removes the runtime's pod sandboxes of pods named bench-
// (and only those), so a harness can share a containerd with other users.
// table groups results by runtime and pod count and prints, per group, a
// markdown table of each measure under each agent, the ratio of the second
// agent to the first and the goal.
package main
