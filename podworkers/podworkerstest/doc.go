// Package podworkerstest provides fakes for testing code that drives or is
// driven by package podworkers.
//
// Syncer is a podworkers.Syncer that records every call as a typed Call,
// succeeds by default, lets a test override any method (Funcs), lets a test
// wait for a condition on the calls without sleeping (Wait), and checks the
// contract the workers promise (Verify): calls for one UID never overlap,
// SyncPod never runs once termination has started, SyncTerminatedPod runs
// only after a successful SyncTerminatingPod, and nothing runs after a
// successful SyncTerminatedPod.
//
// StatusWaiter is a podworkers.StatusWaiter that records the times it was
// asked to wait for and, unless Func is set, returns at once.
//
// Both are safe for concurrent use. Limits: Syncer keeps every call in memory
// (fine for tests, not for a long benchmark: use podworkers.SyncerFuncs
// there), and Verify checks the order of calls per UID, not timing.
package podworkerstest
