package main

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
	"github.com/kubeletkit/kubeletkit/server"
)

// pkiDir is --cert-dir, ROOT-DIR/pki when not given.
func (c *config) pkiDir() string {
	if c.certDir != "" {
		return c.certDir
	}
	return filepath.Join(c.rootDir, "pki")
}

// certificateOptions are the node's certificates by CSR under the cert dir,
// as minikubelet's: examples/apiserver's bootstrap and managers.
func certificateOptions(c *config, log *slog.Logger) apiserver.CertificateOptions {
	return apiserver.CertificateOptions{NodeName: c.nodeName, Kubeconfig: c.kubeconfig, BootstrapKubeconfig: c.bootstrapKubeconfig,
		CertDir: c.pkiDir(), Logger: log.With("component", "certificates")}
}

// bootstrap gets the node a client certificate for system:node:<name>
// with --bootstrap-kubeconfig when --kubeconfig cannot be used as it is
// (apiserver.Bootstrap, upstream kubelet's start); it returns once one is
// issued and --kubeconfig written, or when ctx ends. Without
// --bootstrap-kubeconfig it does nothing. The certificate is not renewed
// while the node runs: a node started after it expired asks again.
func bootstrap(ctx context.Context, c *config, log *slog.Logger) error {
	if c.bootstrapKubeconfig == "" {
		return nil
	}
	return apiserver.Bootstrap(ctx, certificateOptions(c, log))
}

// servingTLS is the kubelet API's certificate: --tls-cert-file's and its
// key (reloaded when they change); with --rotate-server-certificates one
// by CSR from the manager it returns, for the addresses; otherwise a
// self-signed one for the node's name and --node-ip made once under the
// cert dir. The client CA is added by apiOptions.
func servingTLS(c *config, client kubernetes.Interface, addresses func() []v1.NodeAddress, log *slog.Logger) (server.TLSOptions, certificate.Manager, error) {
	switch {
	case c.tlsCertFile != "":
		return server.TLSOptions{CertFile: c.tlsCertFile, KeyFile: c.tlsKeyFile, Logger: log.With("component", "tls")}, nil, nil
	case c.rotateServerCertificates:
		m, err := apiserver.NewServingCertificateManager(certificateOptions(c, log), client, addresses)
		if err != nil {
			return server.TLSOptions{}, nil, err
		}
		return server.TLSOptions{GetCertificate: apiserver.ServingCertificate(m)}, m, nil
	}
	t := server.TLSOptions{CertDir: c.pkiDir(), Host: c.nodeName}
	if ip := net.ParseIP(c.nodeIP); ip != nil {
		t.IPs = []net.IP{ip}
	}
	return t, nil, nil
}

// addressesOf are the serving certificate's addresses: the Node's as the
// provider last handed them to VK once it has (the addresses the agent
// found), else the node's name and --node-ip. client-go's manager asks
// every time it looks, and sends a new CSR when they change.
func addressesOf(c *config, p *atomic.Pointer[vkprovider.Provider]) func() []v1.NodeAddress {
	fixed := []v1.NodeAddress{{Type: v1.NodeHostName, Address: c.nodeName}}
	if c.nodeIP != "" {
		fixed = append(fixed, v1.NodeAddress{Type: v1.NodeInternalIP, Address: c.nodeIP})
	}
	return func() []v1.NodeAddress {
		if b := p.Load(); b != nil {
			if n, ok := b.Node(); ok && len(n.Status.Addresses) > 0 {
				return n.Status.Addresses
			}
		}
		return fixed
	}
}
