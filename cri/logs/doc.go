// Package logs reads container log files and rotates them, as the kubelet
// does for `kubectl logs` (upstream's cri-client pkg/logs and pkg/kubelet/logs).
//
// # Reading
//
// A CRI runtime writes what a container prints to a file whose path
// ContainerStatus reports, one entry per line:
//
//	2016-10-06T00:17:09.669794202Z stdout P the start of a long line,
//	2016-10-06T00:17:09.669794202Z stdout F  and its end
//	2016-10-06T00:17:09.669794203Z stderr F an error
//
// ReadLogs turns such a file back into the container's stdout and stderr:
//
//	opts := logs.NewOptions(podLogOptions, time.Now())
//	err := logs.ReadLogs(ctx, status.LogPath, containerID, opts, runtime, stdout, stderr)
//
// or, from a container ID, ReadContainerLogs; ContainerForLogs picks the
// container of a pod's status that a request names, with upstream's
// messages for a container that has not started.
//
// Partial (P) entries are joined with the following entries of their
// stream up to the full (F) one. TailLines starts at the last N lines,
// found by reading the file backwards in blocks, so the cost does not grow
// with the file; SinceTime skips older lines; Timestamps prefixes each
// line with its time (TimeFormat); LimitBytes stops after that many bytes,
// cutting the last line. Follow keeps reading what the runtime appends,
// woken by inotify on Linux (a timer elsewhere); it survives rotation
// (finishing the renamed file, then reading the new one), and ends once
// the runtime says the container no longer runs and the file is read to
// its end. docker's json-file format is read too, as upstream still reads
// it. A malformed line is skipped and logged (where it is, never what it
// says); a file whose first line is in no known format is an error.
//
// Where this differs from upstream, it is on purpose:
//   - a line the runtime split into partial entries is one line for
//     TailLines and SinceTime (upstream counts and filters each entry, so
//     --tail=1 of a long line prints its last 16 KiB), and stdout and
//     stderr are joined apart (upstream joins a partial stdout entry with
//     whatever entry comes next);
//   - a rotation while following loses no line (upstream switches to the
//     new file at once, dropping what the runtime still wrote to the old
//     one);
//   - a docker JSON entry with an unknown stream is skipped, not the end
//     of the read; a runtime error while following names the container.
//
// # Rotation
//
// A Rotator does what the kubelet's container log manager does: every
// Interval (Run), for each running container whose live log has reached
// MaxSize, it keeps MaxFiles files in all by removing the oldest rotated
// ones, compresses the rotated files but the newest ("<log>.<time>.gz"),
// renames the live log to "<log>.<time>" (RotatedTimeFormat) and asks the
// runtime to reopen it (ReopenContainerLog), renaming it back if that
// fails. Clean removes a container's logs before it is removed; AllLogs
// lists a log's files, oldest first.
//
//	r, err := logs.NewRotator(logs.RotatorOptions{Runtime: runtime, MaxSize: 10 << 20, MaxFiles: 5})
//	go r.Run(ctx)
//
// # Threading and testing
//
// ReadLogs runs in its caller's goroutine (following starts one inotify
// reader, ended before it returns); any number may run at once. A
// Rotator's methods are safe for concurrent use and serialize. Both take
// their clock from their options: with a k8s.io/utils/clock/testing
// FakeClock, a follower checks the container's state and Run rotates when
// the test steps the clock. cri/fake writes CRI log files for its
// containers (fake.Behavior's Stdout, Stderr, LogEvery) and implements
// ReopenContainerLog, so both can be tested without a runtime.
package logs
