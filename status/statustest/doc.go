// Package statustest provides fakes for testing code that drives or is
// driven by package status.
//
// Sink is a status.Sink that holds pods in memory the way an API server
// does (a pod per namespace and name, a resourceVersion bumped on every
// write, deletion with a UID precondition, mirror pods found by name), records
// every call as a typed Call, and can misbehave on demand: Fail makes a call
// return an error, Hang makes it block until its ctx ends, and Hold makes
// status updates wait until the test releases them, in any order it likes.
// Wait blocks until the recorded calls satisfy a condition, so tests never
// sleep.
//
// Sink is safe for concurrent use. Limits: it keeps every call in memory,
// and it does not validate statuses as an API server would.
package statustest
