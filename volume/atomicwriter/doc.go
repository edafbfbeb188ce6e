// Package atomicwriter writes a set of files into a directory so that a
// reader never sees a mix of an old and a new set: what upstream kubelet
// does for configMap, secret, downwardAPI and projected volumes.
//
// # Layout
//
// After Write(payload) the target directory holds:
//
//	<dir>/..2026_11_23_09_15_19.123456789/   the data: every payload file, real files
//	<dir>/..data -> ..2026_11_23_09_15_19.123456789
//	<dir>/<key>  -> ..data/<key>              one symlink per top-level payload entry
//
// A new payload is written into a fresh timestamped directory; then a
// symlink ..data_tmp pointing at it is renamed over ..data, which is one
// atomic rename(2): a reader that resolves ..data (or a user-visible
// symlink through it) gets either the whole old set or the whole new set.
// The user-visible symlinks that the new set needs are then created, those
// it no longer has are removed, and the old data directory is removed last.
// A reader that opened the old data directory before the swap may find its
// files gone once it is removed (ENOENT), never half-written.
//
// Write is idempotent: when the payload equals what ..data holds (bytes and
// modes), nothing is written.
//
// # Validation
//
// Every payload path is checked before anything is written (ValidatePath):
// it must be relative, must not contain a ".." element or start with "..",
// and must respect the lengths of upstream (4096 bytes for the path, 255
// per element). A payload path that fails makes Write fail without touching
// the directory, so a bad key in one pod's configMap can never write outside
// that pod's volume.
//
// # Threading
//
// A Writer is for one directory and its Write calls must be serialized by
// the caller (the volume block runs one operation per volume at a time).
// Readers may read concurrently at any time.
package atomicwriter
