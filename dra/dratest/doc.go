// Package dratest has a fake DRA kubelet plugin for tests of package dra
// and its users: it serves the DRA gRPC service (v1, v1beta1 or both) on a
// unix socket, answers NodePrepareResources with the devices a test set
// for each claim (none by default), fails the calls or claims a test
// chooses, remembers which claims are prepared, and records every call.
// With Options.Health it serves the health service too (v1alpha1
// DRAResourceHealth): NodeWatchResources streams the devices' health the
// test sets (SetHealth), at once and whenever it changes.
//
// With Options.InMemory it serves no socket: Dial (and Dialer, a
// dra.Dialer over several plugins) makes in-memory connections served by
// goroutines of the caller's. A node keeps a connection to each DRA plugin
// and reads its health stream, and a goroutine reading a socket is never
// durably blocked, so a test inside a testing/synctest bubble (agenttest)
// gives the node such a plugin, started inside the bubble.
//
// It serves only the DRA services: a test of plugin discovery pairs it
// with package pluginmanager's fake Registration (type DRAPlugin, the
// driver's name, Endpoint as the endpoint, Services as the supported
// versions).
package dratest
