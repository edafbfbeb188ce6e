// Package volume sets up and tears down the volumes of a node's pods:
// what upstream kubelet's volume manager and its in-tree plugins do for a
// node without the API server's attach/detach (no PersistentVolumeClaims).
//
// # What it does
//
// A Manager keeps a desired state (the pods the agent runs and the volumes
// they need) and an actual state (what is set up where), and its
// reconciler brings the one to the other every ReconcilePeriod (100ms, as
// upstream) and at once after every change. Built-in plugins:
//
//   - emptyDir: a 0777 directory; medium Memory is a tmpfs sized as
//     upstream (sizeLimit, the pod's memory limit, node allocatable);
//     removed with the pod.
//   - With the pod's fsGroup, emptyDir, configMap, secret, downwardAPI and
//     projected volumes belong to that group (setgid directories, group
//     read, and write on emptyDir), as upstream's SetVolumeOwnership.
//   - hostPath: the host's path, after upstream's type checks
//     (DirectoryOrCreate, Directory, FileOrCreate, File, Socket,
//     CharDevice, BlockDevice) and messages ("hostPath type check failed:
//     /x is not a directory").
//   - configMap, secret, downwardAPI, projected (configMap, secret,
//     downwardAPI and serviceAccountToken sources): files written by the
//     atomic writer of package volume/atomicwriter (a timestamped data
//     directory and a ..data symlink swapped by one rename), with items,
//     modes (default 0644), optional sources and keys; secret and projected
//     volumes on a tmpfs, as upstream; rewritten from their sources every
//     RefreshPeriod (1m), on Refresh and when the pod's labels or
//     annotations change.
//   - csi: inline (ephemeral) CSI volumes of the pod spec over the driver's
//     gRPC socket: NodeStageVolume when the driver has STAGE_UNSTAGE_VOLUME,
//     NodePublishVolume, and the reverse on teardown.
//   - persistentVolumeClaim and ephemeral: the claim and its bound
//     persistent volume from Sources.Claims, with upstream's checks and
//     messages ("error processing PVC ns/c: PVC is not bound"); hostPath
//     persistent volumes as hostPath, local ones bind-mounted on
//     kubernetes.io~local-volume/<pv>, CSI ones staged once per node at
//     upstream's global mount path and published per pod on
//     kubernetes.io~csi/<pv>/mount, unstaged after the last pod.
//
// Options.Plugins adds others (the Plugin interface is four methods; a
// plugin may also be a PersistentPlugin, a Remounter or a Measurer).
// Content comes from small interfaces in Options.Sources (ConfigMapSource,
// SecretSource, TokenSource); StaticSources holds configMaps and secrets in
// memory for an agent that reads them from files, and an API-server adapter
// implements the same interfaces. A missing object is apimachinery's
// NotFound error, so optional volumes work with any source.
//
// # Driving it
//
//	m, err := volume.New(volume.Options{RootDir: "/var/lib/kubelet", Sources: srcs, Recorder: rec})
//	...
//	go m.Run(ctx) // rebuilds the actual state from disk, then reconciles
//
//	// in the pod worker's sync, before creating containers:
//	if err := m.WaitForMount(ctx, pod); err != nil {
//		return err // "unmounted volumes=[cfg], unattached volumes=[], failed to process volumes=[]: ..."
//	}
//	mounts, err := m.Mounts(pod, &pod.Spec.Containers[i]) // []*runtimeapi.Mount for the CRI
//
//	// when the pod has terminated:
//	err = m.WaitForUnmount(ctx, pod) // or RemovePod(uid), which does not wait
//
// A volume that fails to set up gets a Warning FailedMount event with
// upstream's message (MountVolume.SetUp failed for volume "cfg" : configmap
// "app" not found) and is retried with a backoff (500ms doubling to 2m2s);
// its pod waits in WaitForMount until MountTimeout (2m3s) while other pods
// proceed. A volume that can never be set up (no plugin supports it, an
// invalid name) fails WaitForMount at once. Mounts resolves subPath and
// subPathExpr inside the volume, refusing ".." and symlinks that lead
// outside it, and pins the result with a bind mount under
// <RootDir>/pods/<uid>/volume-subpaths as upstream does, so that a
// container cannot race the runtime's mount (see Mounts for exactly what
// is checked); the pins are unmounted before their volume is torn down.
//
// After a restart, Run finds the volume directories under
// <RootDir>/pods/<uid>/volumes/<plugin>/<name> and records them as set up
// but unconfirmed: a pod that comes back gets SetUp again (every plugin is
// idempotent, so nothing is mounted twice and emptyDir data is kept), and
// the volumes of pods that do not come back are torn down once
// Options.SourcesReady says the agent knows all its pods.
//
// # Metrics
//
// Options.Metrics is told of each operation as upstream's
// storage_operation_duration_seconds observes it (OpVerifyAttached,
// OpMount, OpUnmount, OpUnmountDevice), under upstream's qualified plugin
// names (QualifiedPluginName); VolumeCounts counts the desired and set-up
// volumes per plugin, as volume_manager_total_volumes, for a collector to
// read at scrape time. Neither needs a metrics library.
//
// # Volume stats
//
// MeasureVolumes measures the volumes set up for a pod whose plugin is a
// Measurer, for the Summary API (package stats asks it, as upstream's
// volume stat calculator asks the volume manager's mounters): a local
// persistent volume by statfs(2) of its mount, a CSI volume (persistent
// or inline) by its driver's NodeGetVolumeStats when the driver has the
// GET_VOLUME_STATS node capability. Each is named after the pod's volume,
// with a PVCRef for a claim's (persistentVolumeClaim or ephemeral)
// volume. A hostPath volume has no figures (upstream's MetricsNil); the
// other built-ins are measured by package stats from their directories.
//
// # Security
//
// Paths built from pod data (pod UID, volume names, item paths, keys,
// subPaths) are validated before anything is written: no absolute paths,
// no ".." elements, DNS-label volume names, upstream's length limits. A
// bad path fails that volume with an error naming it and never touches
// another pod's files. Secret content is never logged nor put in events.
//
// # Threading
//
// New starts nothing and touches no file. Run reconciles on one goroutine
// and runs each operation on its own goroutine (at most one per volume at
// a time), and returns when ctx ends, after all of them. The reconciler's
// decisions are a deterministic core (state.go: plan and complete, no I/O,
// the time passed in; pinned by the golden transcript testdata/reconcile.txt)
// driven by that thin loop. All methods are safe for
// concurrent use. Time comes from Options.Clock (the tests use
// k8s.io/utils/clock/testing's fake clock).
//
// # Fakes
//
// volumetest.Mounter records tmpfs mounts without mounting;
// volumetest.Tokens issues numbered service account tokens; fakecsi.Driver
// is a CSI node driver served over a real unix socket (NodeGetVolumeStats
// answers what a test scripts). StaticSources
// serves configMaps and secrets.
package volume
