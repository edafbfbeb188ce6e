package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/kubeletconfig"
)

// certificateOptions are the node's certificates by CSR under --cert-dir
// (default ROOT-DIR/pki).
func certificateOptions(c *config, nodeName string, log *slog.Logger) apiserver.CertificateOptions {
	dir := c.certDir
	if dir == "" {
		dir = filepath.Join(c.rootDir, "pki")
	}
	return apiserver.CertificateOptions{NodeName: nodeName, Kubeconfig: c.kubeconfig, BootstrapKubeconfig: c.bootstrapKubeconfig,
		CertDir: dir, Logger: log.With("component", "certificates")}
}

// nodeNameOf is the node's name: --hostname-override's or the host's.
func nodeNameOf(c *config) (string, error) {
	if c.nodeName != "" {
		return c.nodeName, nil
	}
	name, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("node name: %w", err)
	}
	return name, nil
}

// bootstrap gets a client certificate with --bootstrap-kubeconfig when
// --kubeconfig cannot be used as it is, before the kubeconfig is read; it
// returns once one is issued, retrying, or when ctx ends.
func bootstrap(ctx context.Context, c *config, log *slog.Logger) error {
	if c.bootstrapKubeconfig == "" {
		return nil
	}
	nodeName, err := nodeNameOf(c)
	if err != nil {
		return err
	}
	return apiserver.Bootstrap(ctx, certificateOptions(c, nodeName, log))
}

// clientRotation, with rotateCertificates, makes client-go's client
// certificate manager (into c.certManagers) and returns rc with its
// connections on the manager's certificate: closed when it rotates, or
// when it expires with none in its place (logged at Error; the node goes on
// with its pods), by c.clientRotation, which run runs. Without, rc as it is.
func clientRotation(c *config, cl kubeletconfig.ClusterConfig, nodeName string, rc *rest.Config, log *slog.Logger) (*rest.Config, error) {
	if !cl.RotateCertificates {
		return rc, nil
	}
	o := certificateOptions(c, nodeName, log)
	current := filepath.Join(o.CertDir, "kubelet-client-current.pem")
	kc, err := clientcmd.LoadFromFile(c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.AuthInfos[ctx.AuthInfo] == nil || kc.AuthInfos[ctx.AuthInfo].ClientCertificate != current {
		return nil, fmt.Errorf("rotateCertificates: the client certificate of --kubeconfig %s must be %s, as --bootstrap-kubeconfig writes it", c.kubeconfig, current)
	}
	m, err := apiserver.NewClientCertificateManager(o)
	if err != nil {
		return nil, err
	}
	c.certManagers = append(c.certManagers, m)
	rc, c.clientRotation, err = apiserver.NewClientRotation(rc, m, apiserver.ClientRotationOptions{Logger: o.Logger})
	return rc, err
}

// servingCertificates, with serverTLSBootstrap, makes client-go's serving
// certificate manager (into c.certManagers) and serves its certificate on
// the kubelet API.
func servingCertificates(c *config, cl kubeletconfig.ClusterConfig, client kubernetes.Interface, nodeName string, opts *agent.Options, log *slog.Logger) error {
	if !cl.ServerTLSBootstrap || opts.HTTP.API == nil {
		return nil
	}
	c.servingAddrs = &addressSource{fixed: []v1.NodeAddress{{Type: v1.NodeHostName, Address: nodeName}}}
	for _, ip := range opts.Node.HostIPs {
		c.servingAddrs.fixed = append(c.servingAddrs.fixed, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	m, err := apiserver.NewServingCertificateManager(certificateOptions(c, nodeName, log), client, c.servingAddrs.addresses)
	if err != nil {
		return err
	}
	c.certManagers = append(c.certManagers, m)
	opts.HTTP.API.TLS.CertDir, opts.HTTP.API.TLS.CertFile, opts.HTTP.API.TLS.KeyFile = "", "", ""
	opts.HTTP.API.TLS.GetCertificate = apiserver.ServingCertificate(m)
	return nil
}

// startCertificates starts the certificate managers and the client
// rotation; the function it returns stops them, once the rotation has
// returned.
func startCertificates(ctx context.Context, c *config) (stop func()) {
	for _, m := range c.certManagers {
		m.Start()
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c.clientRotation != nil {
			_ = c.clientRotation.Run(ctx) // returns nil when ctx ends
		}
	}()
	return func() {
		cancel()
		<-done
		for _, m := range c.certManagers {
			m.Stop()
		}
	}
}

// nodeStatuser is the agent as addressSource reads it.
type nodeStatuser interface {
	NodeStatus() (v1.NodeStatus, bool)
}

// addressSource gives the serving certificate's addresses: the node
// status's once the agent has one (the addresses it detected), else the
// node's name and --node-ip. client-go's manager asks every second and
// sends a new CSR when they change, as upstream follows the Node's
// addresses.
type addressSource struct {
	fixed []v1.NodeAddress
	node  atomic.Pointer[nodeStatuser] // set once the agent is built
}

func (s *addressSource) addresses() []v1.NodeAddress {
	if n := s.node.Load(); n != nil {
		if st, ok := (*n).NodeStatus(); ok && len(st.Addresses) > 0 {
			return st.Addresses
		}
	}
	return s.fixed
}

// follow makes the addresses the node's status's from now on.
func (s *addressSource) follow(n nodeStatuser) { s.node.Store(&n) }
