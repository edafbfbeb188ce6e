// Package statstest is a scripted stats.Host: a node whose CPU is busy at
// a set rate on a clock, with a set memory size, filesystems by mountpoint
// and system cgroups, and real directories measured by file size. It lets
// a test (or a node on the fake runtime, on any OS) build summaries with
// known figures, and records the calls, so that a test can check which
// measurements a summary made.
//
// Limits: DiskUsage sums file sizes (not allocated blocks) and counts
// inodes as du would, without following symbolic links; a path's
// filesystem is the one whose mountpoint is its longest prefix.
package statstest
