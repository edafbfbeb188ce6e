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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/certificate"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
	"github.com/kubeletkit/kubeletkit/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h, --help: the usage is printed, and asked for (exit 0, as upstream kubelet's)
		}
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

	// The node's certificates (certs.go).
	bootstrapKubeconfig, certDir, tlsCertFile, tlsKeyFile string
	rotateServerCertificates                              bool

	// The pods' DNS: agent.NodeOptions.ClusterDNS and ClusterDomain.
	clusterDNS    []string
	clusterDomain string

	// evictionHard is agent.EvictionOptions.Thresholds from
	// --eviction-hard: nil (not given) means upstream's defaults, empty
	// means no threshold eviction.
	evictionHard []eviction.Threshold
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
	fs.IntVar(&c.port, "port", 0, "port of virtual-kubelet's kubelet API over TLS (0: none); its certificate: --tls-cert-file's, one by CSR (--rotate-server-certificates) or a self-signed one under --cert-dir")
	fs.StringVar(&c.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "credentials (a bootstrap token) to ask for the node's client certificate with, when --kubeconfig is missing or its certificate expired; --kubeconfig is then written, naming CERT-DIR/kubelet-client-current.pem")
	fs.StringVar(&c.certDir, "cert-dir", "", "directory of the node's certificates: by CSR (kubelet-client-*.pem, kubelet-server-*.pem) and the self-signed kubelet.crt; empty means ROOT-DIR/pki")
	fs.StringVar(&c.tlsCertFile, "tls-cert-file", "", "serving certificate of the kubelet API (PEM, with its chain), reloaded when it changes; needs --port and --tls-private-key-file")
	fs.StringVar(&c.tlsKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.BoolVar(&c.rotateServerCertificates, "rotate-server-certificates", false, "the kubelet API's serving certificate by CSR (kubernetes.io/kubelet-serving, for the node's name and IPs), renewed before it expires; needs --port, excludes --tls-cert-file")
	fs.Func("cluster-dns", "IP addresses of the cluster's DNS servers, comma-separated, repeatable: the nameservers of ClusterFirst pods (without: they get the host's, as Default pods)", func(s string) error {
		for ip := range strings.SplitSeq(s, ",") {
			if net.ParseIP(ip) == nil {
				return fmt.Errorf("%q is not an IP address", ip)
			}
			c.clusterDNS = append(c.clusterDNS, ip)
		}
		return nil
	})
	fs.StringVar(&c.clusterDomain, "cluster-domain", "", "the cluster's DNS domain (cluster.local in most clusters): ClusterFirst pods search <namespace>.svc.<domain>, svc.<domain> and <domain> before the host's domains")
	fs.StringVar(&c.clientCAFile, "client-ca-file", "", "CA bundle that signs the client certificates the kubelet API accepts (the API server's kubelet-client certificate: kubectl logs, exec, port-forward)")
	fs.StringVar(&c.nodeIP, "node-ip", "", "the node's IP address, in its status and in the serving certificate (default: the machine's first non-loopback address)")
	fs.BoolVar(&c.cgroupsPerQOS, "cgroups-per-qos", false, "put pods in upstream's cgroup hierarchy with node allocatable enforced on kubepods (agent.Options.Cgroups.PerQOS, cgroupfs), as minikubelet's flag; needs root and a container runtime endpoint")
	fs.Func("eviction-hard", "hard eviction thresholds, as upstream's flag (memory.available<100Mi,nodefs.available<10%,...); an empty value turns threshold eviction off; unset means upstream's defaults", func(s string) error {
		ts, err := eviction.ParseThresholds(s, "", "", "")
		if err != nil {
			return err
		}
		c.evictionHard = append([]eviction.Threshold{}, ts...)
		return nil
	})
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
	case (c.tlsCertFile == "") != (c.tlsKeyFile == ""):
		return nil, errors.New("--tls-cert-file and --tls-private-key-file go together")
	case c.tlsCertFile != "" && c.port == 0:
		return nil, errors.New("--tls-cert-file needs --port: it is the kubelet API's")
	case c.rotateServerCertificates && c.port == 0:
		return nil, errors.New("--rotate-server-certificates needs --port: it is the kubelet API's")
	case c.rotateServerCertificates && c.tlsCertFile != "":
		return nil, errors.New("--rotate-server-certificates and --tls-cert-file are two sources of one certificate: give one")
	}
	if d := strings.TrimSuffix(c.clusterDomain, "."); d != "" {
		if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
			return nil, fmt.Errorf("--cluster-domain=%s: %v", c.clusterDomain, errs)
		}
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
	if err := bootstrap(ctx, c, log); err != nil {
		return err
	}
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
	nd, err := newNode(c, client, rt, log)
	if err != nil {
		return err
	}
	runtime := "the embedded fake runtime"
	if c.endpoint != "" {
		runtime = c.endpoint
	}
	fmt.Fprintf(stdout, "vknode: virtual-kubelet node %q, runtime %s\n", c.nodeName, runtime)
	return runNode(ctx, nd, log, stdout)
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

// agentOptions are the agent's options the flags give.
func agentOptions(c *config, rt agent.Runtime) agent.Options {
	// The QoS cgroups only for a real runtime's processes, kubepods
	// limited to the allocatable as minikubelet's default.
	qos := c.cgroupsPerQOS && c.endpoint != ""
	var enforce []string
	if qos {
		enforce = []string{agent.EnforcePods}
	}
	o := agent.Options{Runtime: rt, RootDir: c.rootDir, Logs: agent.LogOptions{Dir: c.podLogsDir},
		Cgroups:  agent.CgroupOptions{PerQOS: qos, EnforceNodeAllocatable: enforce},
		Eviction: agent.EvictionOptions{Thresholds: c.evictionHard}}
	if c.nodeIP != "" {
		o.Node.HostIPs = []string{c.nodeIP}
	}
	// ClusterFirst pods' resolv.conf is the agent's, as minikubelet's.
	o.Node.ClusterDNS = c.clusterDNS
	o.Node.ClusterDomain = c.clusterDomain
	return o
}

// vkNode is what runNode runs: the provider, virtual-kubelet's node around
// it, and the serving certificate's manager when the kubelet API's
// certificate comes by CSR (nil otherwise).
type vkNode struct {
	p       *vkprovider.Provider
	n       *nodeutil.Node
	serving certificate.Manager
}

// newNode builds the provider and virtual-kubelet's node around it.
func newNode(c *config, client kubernetes.Interface, rt agent.Runtime, log *slog.Logger) (*vkNode, error) {
	opts := vkprovider.Options{Agent: agentOptions(c, rt), Client: client, Logger: log}
	// The agent's measurements; the kubelet API serves its probe metrics
	// on /metrics/probes, as upstream.
	metrics, err := prometheus.New(prometheus.Options{Logger: log.With("component", "metrics")})
	if err != nil {
		return nil, err
	}
	opts.Agent.Metrics = metrics
	nodeOpts := []nodeutil.NodeOpt{nodeutil.WithClient(client), func(cfg *nodeutil.NodeConfig) error {
		cfg.NodeSpec = nodeSpec(c)
		// The agent resolves the containers' environment as a kubelet.
		cfg.SkipDownwardAPIResolution = true
		cfg.HTTPListenAddr = net.JoinHostPort("", strconv.Itoa(c.port))
		return nil
	}}
	nd := &vkNode{}
	var built atomic.Pointer[vkprovider.Provider]
	if c.port != 0 {
		o, m, err := apiOptions(c, client, addressesOf(c, &built), metrics.ProbeHandler(), log)
		if err != nil {
			return nil, err
		}
		nodeOpts = append(nodeOpts, o...)
		nd.serving = m
	}
	n, err := nodeutil.NewNode(c.nodeName, vkprovider.NewProviderFunc(opts, func(b *vkprovider.Provider) { built.Store(b) }), nodeOpts...)
	if err != nil {
		return nil, err
	}
	nd.p, nd.n = built.Load(), n
	return nd, nil
}

// apiOptions serve virtual-kubelet's kubelet API (logs, exec, attach,
// port-forward, stats, resource metrics, through the provider; the probe
// metrics, /metrics/probes, from probes) over TLS
// with the certificate servingTLS says, authenticating client
// certificates of --client-ca-file and bearer tokens (TokenReview), and
// authorizing with SubjectAccessReview (virtual-kubelet's WebhookAuth), as
// upstream kubelet with x509 and webhook authentication. The manager is
// the serving certificate's, with --rotate-server-certificates.
func apiOptions(c *config, client kubernetes.Interface, addresses func() []v1.NodeAddress, probes http.Handler, log *slog.Logger) ([]nodeutil.NodeOpt, certificate.Manager, error) {
	t, m, err := servingTLS(c, client, addresses, log)
	if err != nil {
		return nil, nil, err
	}
	tlsConfig, _, err := server.TLSConfig(t)
	if err != nil {
		return nil, nil, err
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
			return nil, nil, fmt.Errorf("--client-ca-file: %w", err)
		}
		ca, err := dynamiccertificates.NewStaticCAContent("client-ca-bundle", bundle)
		if err != nil {
			return nil, nil, fmt.Errorf("--client-ca-file %s: %w", c.clientCAFile, err)
		}
		authOpts = append(authOpts, func(cfg *nodeutil.WebhookAuthConfig) error {
			cfg.AuthnConfig.ClientCertificateCAContentProvider = ca
			return nil
		})
	}
	auth, err := nodeutil.WebhookAuth(client, c.nodeName, authOpts...)
	if err != nil {
		return nil, nil, fmt.Errorf("kubelet API authentication: %w", err)
	}
	mux := http.NewServeMux()
	// Beside the provider's routes (virtual-kubelet's "/"); its
	// authorization asks for nodes/metrics under /metrics, as upstream's.
	mux.Handle("GET /metrics/probes", probes)
	return []nodeutil.NodeOpt{nodeutil.AttachProviderRoutes(mux), func(cfg *nodeutil.NodeConfig) error {
		cfg.TLSConfig = tlsConfig
		cfg.Handler = nodeutil.WithAuth(auth, mux)
		return nil
	}}, m, nil
}

// runNode runs the provider and the node side by side, and the serving
// certificate's manager, until ctx ends or either fails, and returns once
// all have stopped.
func runNode(ctx context.Context, nd *vkNode, log *slog.Logger, stdout io.Writer) error {
	p, n := nd.p, nd.n
	if nd.serving != nil {
		nd.serving.Start()
		defer nd.serving.Stop()
	}
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
