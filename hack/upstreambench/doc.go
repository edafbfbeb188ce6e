// Package upstreambench measures upstream kubelet's relisting PLEG (v1.36.3's
// GenericPLEG over its kuberuntime manager, as the kubelet builds them) and
// kubeletkit's pleg.Generic side by side, in one process, against the same
// in-memory runtime (cri/fake) holding the same pods, so that a ratio between
// the two is measured on one machine in one run.
//
// It is a separate module, outside go.work and outside the root module's
// ./...: k8s.io/kubernetes takes minutes to build the first time and pulls in
// dependencies the SDK never imports. Run it with
//
//	cd hack/upstreambench && GOWORK=off go test -run '^$' -bench . -benchmem
//
// The package has no code of its own outside its tests.
package upstreambench
