package main

import (
	"flag"
	"fmt"
	"net/netip"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// healthzFlags binds upstream kubelet's healthz port flags to kc: the
// port of the plain-HTTP /healthz that kubeadm join's kubelet-check polls,
// and its address. Their defaults are upstream's configuration's,
// 127.0.0.1:10248, with --config or without: a test or script running
// several minikubelets on one machine gives each --healthz-port 0 (none)
// or a port of its own.
func healthzFlags(fs *flag.FlagSet, kc *kubeletv1beta1.KubeletConfiguration) {
	fs.Var(optional[int32]{&kc.HealthzPort, parseInt32}, "healthz-port", "The port of the localhost healthz endpoint (set to 0 to disable)")
	fs.Var(value[string]{&kc.HealthzBindAddress, parseIP}, "healthz-bind-address", "The IP address for the healthz server to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and IP address families)")
}

// parseIP reads an IP address, as upstream's IP flags: anything else is
// refused.
func parseIP(s string) (string, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", fmt.Errorf("%q is not an IP address", s)
	}
	return a.String(), nil
}
