// Package imagegc removes the images a node no longer needs, with upstream
// kubelet's image garbage collection semantics.
//
// A Manager tracks each image the runtime lists: when it was first seen
// and when a container (in any state) last used it. Two operations remove
// images, never one in use, never a pinned one (Options.PinnedImages, or
// pinned by the runtime, as containerd pins its sandbox image) and never
// one first seen less than Policy.MinAge ago (2m: it may have just been
// pulled for a container about to start):
//
//   - DeleteUnusedImages removes all the others. It is what the eviction
//     manager calls under disk pressure (it implements
//     eviction.ImageGarbageCollector).
//   - GarbageCollect, which Run calls at once and every 5m, removes images
//     unused for longer than Policy.MaxAge (off by default), then, when the
//     image filesystem is at or above HighThresholdPercent (85%) of its
//     capacity, the least recently used images (never used first, then the
//     earliest seen) until LowThresholdPercent (80%) would be reached. Falling
//     short is an error and a FreeDiskSpaceFailed event on the node, with
//     upstream's message; a filesystem reporting no capacity is an
//     InvalidDiskCapacity event. Run logs a failure once and, from the
//     second failure in a row, records an ImageGCFailed event.
//
// After a pass that removed images, Options.AfterFree is told which images
// are left (the IDs of every image the runtime still has), as upstream's
// post-GC hooks: the node's records of pulled images (cri/pullrecords)
// forget those of the images that went.
//
// A failed removal does not stop the others; the errors are joined. The
// manager's state is in memory: after a restart every image counts as first
// seen at the first pass, so MinAge protects them all for its length, as
// upstream's.
//
// Differences from upstream: an image never used counts its MaxAge from
// when it was first seen rather than from the start of time; images are
// matched to containers by ID and by every reference the runtime reports
// (ImageRef, ImageId and the container's image spec); there are no
// per-runtime-class image filesystems.
package imagegc
