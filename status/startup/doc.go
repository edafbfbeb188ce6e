// Package startup measures how long pods take to start, as upstream
// kubelet's pod startup latency tracker does for
// kubelet_pod_start_total_duration_seconds and
// kubelet_pod_start_sli_duration_seconds (the "pod startup latency SLI" of
// sig-scalability).
//
// A Tracker is told of the moments that matter and answers once per pod
// with an Observation:
//
//	t := startup.New()
//	t.Add(pod)                          // the node was given the pod
//	t.PullStarted(pod.UID, start)       // each image pull for it
//	t.PullFinished(pod.UID, end)        // each pull that succeeded
//	if o, ok := t.Observe(pod, &status, now); ok {
//		// every container of the pod runs: o.Total, and o.SLI when o.CountsForSLI
//	}
//	t.Forget(pod.UID)                   // the node forgot the pod
//
// # What counts
//
// A pod is followed only when the node first sees it not yet started
// (status.startTime unset: a pod that ran before the node restarted is not
// timed), with a creation time, and not unschedulable (condition
// PodScheduled False; such a pod is never followed afterwards, as
// upstream's). It is answered for once: the first status in which every
// container (init containers aside) is running with a start time
// (Started). A terminal status, or Forget, drops it.
//
// Total is from the pod's creation to that status. SLI is Total less the
// time spent pulling its images (the union of the pulls' intervals, so
// that pulls that overlap count once; as upstream's, each finished pull is
// paired with the oldest start not yet paired, so a failed pull's start is
// paired with the next success) and less the time its init containers ran
// (each run of a non-restartable init container seen exited, from its
// start to its end; sidecars run on and are not excluded). CountsForSLI is
// false for a stateful pod (Stateful: a volume other than a secret,
// configMap, downwardAPI, emptyDir, projected, gitRepo, image, generic
// ephemeral or CSI ephemeral volume), which the SLI leaves out; its Total
// is still reported.
//
// # Where ours differs
//
// Upstream marks the moment its status manager wrote a started status to
// the API server, and measures to the moment that status came back on its
// watch; a Tracker measures to the moment it is shown the started status
// (the agent: when its status is generated), so it reads shorter by the API
// round trip and works without an API server. Upstream counts an init
// container's run from the moment its start call returned to the moment it
// was seen finished; ours from the runtime's own start and finish times.
//
// # Threading
//
// A Tracker's methods are safe for concurrent use and never block; it
// holds no clock (every moment is given) and starts no goroutine. The
// decisions are pure functions too: Started, Stateful, Unschedulable,
// PullTime, InitContainerTime.
package startup
