// Package dratest has a fake DRA kubelet plugin for tests of package dra
// and its users: it serves the DRA gRPC service (v1, v1beta1 or both) on a
// unix socket, answers NodePrepareResources with the devices a test set
// for each claim (none by default), fails the calls or claims a test
// chooses, remembers which claims are prepared, and records every call.
//
// It serves only the DRA service: a test of plugin discovery pairs it with
// package pluginmanager's fake Registration (type DRAPlugin, the driver's
// name, Endpoint as the endpoint, Services as the supported versions).
package dratest
