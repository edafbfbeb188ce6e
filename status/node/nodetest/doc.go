// Package nodetest provides fakes for testing code around package
// status/node.
//
// Sink is both a node.StatusSink and a node.LeaseSink: it keeps the last
// node status and the lease in memory, records every call as a typed Call,
// makes a call fail (Fail) or block until its ctx ends (Hang) on demand, and
// lets a test wait for a condition on the calls (Wait). Runtime is a
// node.Runtime and node.ImageLister whose answers a test sets. Machine is a
// node.Machine with a fixed answer. All are safe for concurrent use; Sink
// keeps every call in memory.
package nodetest
