// Package source is where a kubelet's pods come from: the static-pod
// manifest directory (File), a manifest URL (URL), and any source of the
// user's, such as an API-server watch, feeding a channel; and the merger
// (Config) that turns what they send into the incremental stream of
// syncloop.PodUpdate the sync loop consumes. It is upstream kubelet's
// pkg/kubelet/config with PodConfigNotificationIncremental.
//
// # Driving it
//
//	cfg := source.NewConfig(source.ConfigOptions{Logger: log, Recorder: rec})
//	f, err := source.NewFile(source.FileOptions{
//		Path: "/etc/kubernetes/manifests", NodeName: node,
//		Out:  cfg.Channel(ctx, syncloop.SourceFile),
//	})
//	if err != nil { ... }
//	go f.Run(ctx)
//	api := cfg.Channel(ctx, syncloop.SourceAPI) // an API adapter sends SET, then ADD/UPDATE/DELETE/REMOVE
//
//	for u := range cfg.Updates() {
//		switch u.Op {
//		case syncloop.OpAdd: // new pods
//		case syncloop.OpUpdate, syncloop.OpDelete: // changed, or being deleted
//		case syncloop.OpRemove: // gone from their source
//		case syncloop.OpReconcile: // only their status changed
//		}
//	}
//	ready := cfg.SeenAllSources(syncloop.SourceFile, syncloop.SourceAPI)
//
// syncloop.Loop does the consuming; package agent wires it all.
//
// # The merge
//
// Config keeps each source's pods by UID. A SET (the complete list of a
// source) is diffed against them into REMOVE (UID gone), ADD (new UID),
// UPDATE (spec, labels, annotations or deletion fields changed), DELETE (the
// same, with a deletionTimestamp) and RECONCILE (only the status changed);
// ADD, UPDATE, DELETE, RECONCILE and REMOVE are applied pod by pod with the
// same comparison (an ADD of a known pod is an update, ...). Each message
// yields at most one update per kind, in upstream's order (REMOVE, ADD,
// UPDATE, DELETE, RECONCILE), never an empty one. New pods get the
// kubernetes.io/config.source and kubernetes.io/config.seen annotations.
// Pods without UID or name, pods whose name_namespace another pod of the
// same message or another pod already held has, and mirror pods from a
// source other than the API server are refused with a Warning
// FailedValidation event, as are the pods of a message with an unknown
// operation. Pods are never modified: not those the sources
// send (a source, in turn, must not modify a pod it sent, because a pod sent
// again as the same object is taken as unchanged), nor those in updates (a
// change makes a new copy). The rules are in Merger, a deterministic value
// with no goroutine that tests and benchmarks drive directly.
//
// # Static pods
//
// File and URL decode YAML or JSON manifests holding a v1.Pod or a
// v1.PodList (DecodeManifest), apply the API server's defaults
// (validation.DefaultPod, package podspec/validation) and upstream's
// static-pod defaults (ApplyStaticDefaults: a UID hashed from the pod, the
// node and the path or URL; the name suffixed with the node name; namespace
// default; the config.hash annotation; a NoExecute toleration for file pods;
// phase Pending), and validate them as the API server validates a pod it
// creates, with its field paths and messages (validation.ValidatePod; its
// errors wrap validation.ErrInvalidPod), refusing references to API
// objects (APIObjectReference). ReadManifest does it all. A broken
// manifest is reported by its file name or URL and never affects another
// manifest's pods. The file source reads
// everything every Period (20s) and in between watches its directory with
// inotify (Linux): a manifest written and closed, renamed into place or
// removed is read at once (a burst of events makes one read), one still
// being written waits for its close. Where it cannot watch (DisableWatch,
// not Linux, no inotify instance or watch left, Path and its parent
// missing) it checks every PollInterval (1s) whether a file was added,
// removed or changed its size, mode or modification time, which triggers a
// read of the changed files.
//
// # Threading
//
// NewConfig, NewFile and NewURL start nothing. Config.Channel starts one
// goroutine per source, which ends with the context given to Channel;
// Config.Wait waits for them. File.Run and URL.Run run in the caller's
// goroutine and return nil when their context ends; File.Run starts one
// goroutine to read the inotify events and returns after it has ended. A
// Config is safe for concurrent use; a Merger, a File and a URL are not (Run
// is their only user). Sends on every channel give up when the sender's context ends, so
// nothing blocks forever after shutdown.
//
// # Testing with it
//
// There is no fake: the sources read real files and URLs (t.TempDir,
// httptest.Server), take their periods from an injected k8s.io/utils/clock
// clock, and a test can feed Config.Channel, or Merger.Merge, PodUpdates of
// its own in place of an API server. A test on simulated time (a fake clock
// it steps, a testing/synctest bubble) sets FileOptions.DisableWatch: the
// kernel's notifications do not follow that time.
package source
