// Package evictiontest has fakes for the eviction manager's dependencies: a
// stats provider whose summary a test sets, a pod killer and garbage
// collectors that record their calls. All are safe for concurrent use.
//
// Limits: Stats returns the summary it holds (a deep copy), it does not
// derive node usage from pod usage; a test that wants garbage collection to
// free disk changes the summary from the collector's OnImages or
// OnContainers hook.
package evictiontest
