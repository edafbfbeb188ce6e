package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
	"github.com/kubeletkit/kubeletkit/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "vknode:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	kubeconfig, nodeName, endpoint, rootDir, podLogsDir, nodeIP, clientCAFile string
	port                                                                      int
	verbose                                                                   bool
	cgroupsPerQOS                                                             bool
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("vknode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the API server to join (required)")
	fs.StringVar(&c.nodeName, "node-name", "", "name of the Node (required)")
	fs.StringVar(&c.endpoint, "container-runtime-endpoint", "", "CRI endpoint (unix:///run/containerd/containerd.sock); empty runs the embedded fake runtime")
	fs.StringVar(&c.rootDir, "root-dir", filepath.Join(os.TempDir(), "vknode"), "directory for pod data and logs")
	fs.StringVar(&c.podLogsDir, "pod-logs-dir", "", "directory of the containers' log files (upstream's podLogsDir); empty means ROOT-DIR/logs")
	fs.IntVar(&c.port, "port", 0, "port of virtual-kubelet's kubelet API over TLS, a self-signed certificate under ROOT-DIR/pki (0: none)")
	fs.StringVar(&c.clientCAFile, "client-ca-file", "", "CA bundle that signs the client certificates the kubelet API accepts (the API server's kubelet-client certificate: kubectl logs, exec, port-forward)")
	fs.StringVar(&c.nodeIP, "node-ip", "", "the node's IP address, in its status and in the serving certificate (default: the machine's first non-loopback address)")
	fs.BoolVar(&c.cgroupsPerQOS, "cgroups-per-qos", false, "put pods in upstream's cgroup hierarchy with node allocatable enforced on kubepods (agent.Options.Cgroups.PerQOS, cgroupfs), as minikubelet's flag; needs root and a container runtime endpoint")
	fs.BoolVar(&c.verbose, "v", false, "debug logs")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() != 0:
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case c.kubeconfig == "":
		return nil, errors.New("--kubeconfig is required")
	case c.nodeName == "":
		return nil, errors.New("--node-name is required")
	case c.port < 0 || c.port > 65535:
		return nil, fmt.Errorf("--port=%d: not a port", c.port)
	case c.clientCAFile != "" && c.port == 0:
		return nil, errors.New("--client-ca-file needs --port: it is the kubelet API's")
	case c.nodeIP != "" && net.ParseIP(c.nodeIP) == nil:
		return nil, fmt.Errorf("--node-ip=%s: not an IP address", c.nodeIP)
	}
	if errs := validation.IsDNS1123Subdomain(c.nodeName); len(errs) > 0 {
		return nil, fmt.Errorf("--node-name=%s: %v", c.nodeName, errs)
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if c.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	client, err := newClient(c.kubeconfig)
	if err != nil {
		return err
	}
	var rt agent.Runtime
	if c.endpoint != "" {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		crt, err := cri.Dial(dctx, c.endpoint, cri.DialOptions{Logger: log})
		cancel()
		if err != nil {
			return err
		}
		defer crt.Close()
		rt = crt
	}
	p, n, err := newNode(c, client, rt, log)
	if err != nil {
		return err
	}
	runtime := "the embedded fake runtime"
	if c.endpoint != "" {
		runtime = c.endpoint
	}
	fmt.Fprintf(stdout, "vknode: virtual-kubelet node %q, runtime %s\n", c.nodeName, runtime)
	return runNode(ctx, p, n, log, stdout)
}

// newClient is the API server's client of kubeconfig, with upstream
// kubelet's limits (50 queries per second, bursts of 100): client-go's
// default of 5 queues statuses behind each other.
func newClient(kubeconfig string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = 50, 100
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return client, nil
}

// nodeSpec is the Node virtual-kubelet registers: upstream kubelet's
// default labels (a NodeRestriction admission lets a node set them) and
// virtual-kubelet's type label, no taint, and the kubelet API's port.
func nodeSpec(c *config) v1.Node {
	return v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.nodeName, Labels: map[string]string{
			v1.LabelHostname:      c.nodeName,
			v1.LabelOSStable:      goruntime.GOOS,
			v1.LabelArchStable:    goruntime.GOARCH,
			apiserver.LabelOSBeta: goruntime.GOOS, apiserver.LabelArchBeta: goruntime.GOARCH,
			"type": "virtual-kubelet",
		}},
		Status: v1.NodeStatus{DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: int32(c.port)}}},
	}
}

// newNode builds the provider and virtual-kubelet's node around it.
func newNode(c *config, client kubernetes.Interface, rt agent.Runtime, log *slog.Logger) (*vkprovider.Provider, *nodeutil.Node, error) {
	// The QoS cgroups only for a real runtime's processes, kubepods
	// limited to the allocatable as minikubelet's default.
	qos := c.cgroupsPerQOS && c.endpoint != ""
	var enforce []string
	if qos {
		enforce = []string{agent.EnforcePods}
	}
	opts := vkprovider.Options{
		Agent:  agent.Options{Runtime: rt, RootDir: c.rootDir, Logs: agent.LogOptions{Dir: c.podLogsDir}, Cgroups: agent.CgroupOptions{PerQOS: qos, EnforceNodeAllocatable: enforce}},
		Client: client,
		Logger: log,
	}
	if c.nodeIP != "" {
		opts.Agent.Node.HostIPs = []string{c.nodeIP}
	}
	nodeOpts := []nodeutil.NodeOpt{nodeutil.WithClient(client), func(cfg *nodeutil.NodeConfig) error {
		cfg.NodeSpec = nodeSpec(c)
		// The agent resolves the containers' environment as a kubelet.
		cfg.SkipDownwardAPIResolution = true
		cfg.HTTPListenAddr = net.JoinHostPort("", strconv.Itoa(c.port))
		return nil
	}}
	if c.port != 0 {
		o, err := apiOptions(c, client)
		if err != nil {
			return nil, nil, err
		}
		nodeOpts = append(nodeOpts, o...)
	}
	var p *vkprovider.Provider
	n, err := nodeutil.NewNode(c.nodeName, vkprovider.NewProviderFunc(opts, func(b *vkprovider.Provider) { p = b }), nodeOpts...)
	if err != nil {
		return nil, nil, err
	}
	return p, n, nil
}

// apiOptions serve virtual-kubelet's kubelet API (logs, exec, attach,
// port-forward, stats, resource metrics, through the provider) over TLS
// with a self-signed certificate kept under ROOT-DIR/pki, authenticating
// client certificates of --client-ca-file and bearer tokens (TokenReview),
// and authorizing with SubjectAccessReview (virtual-kubelet's WebhookAuth),
// as upstream kubelet with x509 and webhook authentication.
func apiOptions(c *config, client kubernetes.Interface) ([]nodeutil.NodeOpt, error) {
	t := server.TLSOptions{CertDir: filepath.Join(c.rootDir, "pki"), Host: c.nodeName}
	if ip := net.ParseIP(c.nodeIP); ip != nil {
		t.IPs = []net.IP{ip}
	}
	tlsConfig, _, err := server.TLSConfig(t)
	if err != nil {
		return nil, err
	}
	var authOpts []nodeutil.WebhookAuthOption
	if c.clientCAFile != "" {
		// The handshake asks for a certificate without verifying it; the
		// authenticator verifies it against the bundle, so that a request
		// with a bearer token and no certificate still gets in.
		tlsConfig.ClientAuth = tls.RequestClientCert
		// Read once, at start: the file-watching provider would need a
		// goroutine of its own for the node's lifetime.
		bundle, err := os.ReadFile(c.clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		ca, err := dynamiccertificates.NewStaticCAContent("client-ca-bundle", bundle)
		if err != nil {
			return nil, fmt.Errorf("--client-ca-file %s: %w", c.clientCAFile, err)
		}
		authOpts = append(authOpts, func(cfg *nodeutil.WebhookAuthConfig) error {
			cfg.AuthnConfig.ClientCertificateCAContentProvider = ca
			return nil
		})
	}
	auth, err := nodeutil.WebhookAuth(client, c.nodeName, authOpts...)
	if err != nil {
		return nil, fmt.Errorf("kubelet API authentication: %w", err)
	}
	mux := http.NewServeMux()
	return []nodeutil.NodeOpt{nodeutil.AttachProviderRoutes(mux), func(cfg *nodeutil.NodeConfig) error {
		cfg.TLSConfig = tlsConfig
		cfg.Handler = nodeutil.WithAuth(auth, mux)
		return nil
	}}, nil
}

// runNode runs the provider and the node side by side until ctx ends or
// either fails, and returns once both have returned.
func runNode(ctx context.Context, p *vkprovider.Provider, n *nodeutil.Node, log *slog.Logger, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	keep := func(what string, err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			mu.Unlock()
		}
	}
	wg.Go(func() {
		defer cancel()
		keep("provider", p.Run(ctx))
	})
	wg.Go(func() {
		defer cancel()
		keep("virtual-kubelet", n.Run(vklog.WithLogger(ctx, vkLogger{log.With("component", "virtual-kubelet")})))
	})
	wg.Go(func() {
		select {
		case <-n.Ready():
			fmt.Fprintln(stdout, "vknode: node registered; it turns Ready with the agent")
		case <-ctx.Done():
		}
	})
	wg.Wait()
	return errors.Join(errs...)
}
