// Package upstreambench measures upstream kubelet v1.36.3 and kubeletkit side
// by side, in one process on one machine, so that a ratio between the two is
// measured in one run:
//
//   - the relisting PLEG: upstream's GenericPLEG over its kuberuntime manager,
//     as the kubelet builds them, and kubeletkit's pleg.Generic, against the
//     same in-memory runtime (cri/fake) holding the same pods
//     (BenchmarkRelist*, docs/benchmarks-pleg.md);
//   - the container log reader behind `kubectl logs`: upstream's
//     k8s.io/cri-client/pkg/logs (v0.36.3, which the kuberuntime manager's
//     ReadLogs calls after converting the request's options) and kubeletkit's
//     cri/logs, reading the same files with the workload of cri/logs' own
//     benchmarks (BenchmarkLogTail100, BenchmarkLogFollow, docs/logs.md).
//     TestLogsReadSame and TestLogsFollowSame check that both write the same
//     bytes, and pin both sides where they differ on purpose.
//
// It is a separate module, outside go.work and outside the root module's
// ./...: k8s.io/kubernetes takes minutes to build the first time and pulls in
// dependencies the SDK never imports. Run it with
//
//	cd hack/upstreambench && GOWORK=off go test -run '^$' -bench . -benchmem
//
// The package has no code of its own outside its tests.
package upstreambench
