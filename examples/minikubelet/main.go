package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig/dns"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/examples/websockets"
	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/nodeshutdown/logind"
	"github.com/kubeletkit/kubeletkit/server"
)

func main() {
	// run stops on SIGINT and SIGTERM (unless --shutdown-signal takes it).
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "minikubelet:", err)
		os.Exit(1)
	}
}

// defaultManifests is where the example static pods are, relative to the
// repository's root.
var defaultManifests = filepath.Join("examples", "minikubelet", "manifests")

// config is what the flags say.
type config struct {
	endpoint, manifestPath, manifestURL, nodeName, rootDir, podLogsDir, logLinksDir, address string
	certDir                                                                                  string
	objectPath, kubeconfig, nodeLabels, nodeIP                                               string
	tlsCertFile, tlsKeyFile, clientCAFile, authorizationMode                                 string
	readOnlyPort, containerLogMaxFiles                                                       int
	containerLogMaxSize                                                                      string
	anonymousAuth, tokenWebhook, websockets                                                  bool
	nodeStatusFrequency                                                                      time.Duration
	port, nodeLeaseSeconds, imageGCHigh, imageGCLow, kubeAPIBurst                            int
	kubeAPIQPS                                                                               float64
	imageMinTTL                                                                              time.Duration
	runOnce, evented, registerNode, seccompDefault                                           bool
	runOnceTimeout                                                                           time.Duration
	verbose                                                                                  bool
	evictionHard, evictionSoft, evictionSoftGrace, evictionReclaim                           string
	allowedUnsafeSysctls                                                                     string
	kubeReserved, systemReserved                                                             string
	devicePluginDir                                                                          string
	localStatePath, localStateKeyFile                                                        string
	localState                                                                               *localstate.Bolt // opened by join, closed by run
	cgroupsPerQOS                                                                            bool
	runtimeName                                                                              string // what the runtime at endpoint said it is (CRI Version)
	cgroupDriver, cgroupRoot, enforceNodeAllocatable                                         string
	shutdownGracePeriod, shutdownGracePeriodCriticalPods                                     time.Duration
	shutdownSignal                                                                           string
	clusterDNS                                                                               ipList
	clusterDomain, resolvConf                                                                string
	set                                                                                      map[string]bool // the flags given
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("minikubelet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.endpoint, "container-runtime-endpoint", "", "CRI endpoint (unix:///run/containerd/containerd.sock); empty runs the embedded fake runtime")
	fs.StringVar(&c.manifestPath, "pod-manifest-path", "", "directory (or file) of static pod manifests; empty means examples/minikubelet/manifests when it exists, else the embedded copy")
	fs.StringVar(&c.manifestURL, "manifest-url", "", "URL of a pod or pod list to run")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of an API server to join (pods bound to the node, statuses, the Node and its Lease, events, mirror pods); empty runs standalone")
	fs.StringVar(&c.nodeLabels, "node-labels", "", "labels added to the Node when it is registered (key=value,...)")
	fs.Float64Var(&c.kubeAPIQPS, "kube-api-qps", 50, "queries per second to the API server (client-go's limiter; upstream kubelet's default)")
	fs.IntVar(&c.kubeAPIBurst, "kube-api-burst", 100, "burst of queries to the API server")
	fs.BoolVar(&c.registerNode, "register-node", true, "register the Node with the API server; false updates the status of a Node someone else created")
	fs.IntVar(&c.nodeLeaseSeconds, "node-lease-duration-seconds", 40, "duration of the node's Lease, renewed every quarter of it")
	fs.DurationVar(&c.nodeStatusFrequency, "node-status-update-frequency", 10*time.Second, "how often the node's status is computed (and posted when it changed)")
	fs.StringVar(&c.objectPath, "object-manifest-path", "", "directory of ConfigMap and Secret manifests (one per file) for pods' configMap, secret and projected volumes")
	fs.StringVar(&c.nodeName, "node-name", "", "node name (default: the host name)")
	fs.StringVar(&c.rootDir, "root-dir", filepath.Join(os.TempDir(), "minikubelet"), "directory for pod data and logs")
	fs.StringVar(&c.logLinksDir, "container-log-links-dir", "", "directory that gets a link to each container's log file, as upstream's /var/log/containers; empty: no links")
	fs.StringVar(&c.podLogsDir, "pod-logs-dir", "", "directory of the containers' log files (upstream's podLogsDir, /var/log/pods there); empty means ROOT-DIR/logs")
	fs.StringVar(&c.address, "address", "0.0.0.0", "address the kubelet API and the read-only server listen on")
	fs.IntVar(&c.port, "port", 10250, "port of the kubelet API over TLS: logs, exec, attach, port-forward, stats (0: none)")
	fs.IntVar(&c.readOnlyPort, "read-only-port", 0, "port of the read-only HTTP server, without authentication: /pods (with the pods' environment), /healthz, /stats/summary, /metrics; 0, the default as in upstream's KubeletConfiguration, serves none (upstream's own port is 10255)")
	fs.StringVar(&c.tlsCertFile, "tls-cert-file", "", "serving certificate of the kubelet API (PEM, with its chain); empty: a self-signed one under --cert-dir")
	fs.StringVar(&c.tlsKeyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&c.certDir, "cert-dir", "", "where the self-signed serving certificate is kept (default ROOT-DIR/pki)")
	fs.StringVar(&c.clientCAFile, "client-ca-file", "", "CA bundle that signs the client certificates the kubelet API accepts (the API server's kubelet-client certificate)")
	fs.BoolVar(&c.anonymousAuth, "anonymous-auth", false, "let requests to the kubelet API without credentials in as system:anonymous")
	fs.BoolVar(&c.tokenWebhook, "authentication-token-webhook", false, "check bearer tokens with the API server's TokenReview (needs --kubeconfig)")
	fs.BoolVar(&c.websockets, "extend-websockets-to-kubelet", true, "serve kubectl's WebSockets (exec, attach and cp over v5.channel.k8s.io, port-forward's SPDY tunnel) on the kubelet API with upstream kubelet's translator, "+
		"and declare the node feature ExtendWebSocketsToKubelet so that the API server sends them on instead of translating them itself (upstream's feature gate, on since 1.36)")
	fs.StringVar(&c.authorizationMode, "authorization-mode", "", "AlwaysAllow or Webhook (SubjectAccessReview; needs --kubeconfig); default Webhook with --kubeconfig, else AlwaysAllow")
	fs.StringVar(&c.containerLogMaxSize, "container-log-max-size", "10Mi", "size at which a running container's log is rotated (a quantity; 0 or negative: never)")
	fs.IntVar(&c.containerLogMaxFiles, "container-log-max-files", 5, "how many files a container's log may have, the live one included (at least 2)")
	fs.StringVar(&c.nodeIP, "node-ip", "", "the node's IP address, reported in its status and in the serving certificate (default: the machine's first non-loopback address)")
	fs.BoolVar(&c.runOnce, "runonce", false, "start the pods, wait until they run, print their statuses and exit")
	fs.DurationVar(&c.runOnceTimeout, "runonce-timeout", 2*time.Minute, "how long --runonce waits")
	fs.BoolVar(&c.evented, "evented-pleg", false, "follow the runtime's container events instead of relisting every second (upstream's EventedPLEG)")
	fs.StringVar(&c.evictionHard, "eviction-hard", "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%", "hard eviction thresholds (signal<quantity or percentage, comma-separated); an empty value turns threshold eviction off")
	fs.StringVar(&c.evictionSoft, "eviction-soft", "", "soft eviction thresholds, same syntax; each needs a grace period")
	fs.StringVar(&c.evictionSoftGrace, "eviction-soft-grace-period", "", "grace periods of the soft thresholds (memory.available=1m30s,...)")
	fs.StringVar(&c.allowedUnsafeSysctls, "allowed-unsafe-sysctls", "", "unsafe sysctls pods may set beyond the safe set, comma-separated names or prefixes ending in * (kernel.msg*,net.core.somaxconn); only groups the kernel namespaces")
	fs.StringVar(&c.localStatePath, "local-state", "", "with --kubeconfig, the file (bbolt, 0600) where the node keeps the pods bound to it, the configMaps, secrets and tokens they read and the statuses the API server has not acknowledged, so that a restart while the API server does not answer runs the kept pods (docs/localstate.md); default ROOT-DIR/localstate.db; set to \"\" to keep nothing, as upstream kubelet")
	fs.StringVar(&c.localStateKeyFile, "local-state-key-file", "", "with --kubeconfig, a file (owner-only: 0600 or 0400) of the key that seals the secrets and service account tokens the local state keeps: 32 raw bytes or 64 hexadecimal digits (AES-256-GCM; head -c 32 /dev/urandom makes one); "+
		"keep it off the disk of the local state. Without it the local state keeps no secrets or tokens, and a pod that mounts one cannot have that volume set up again after a restart while the API server does not answer")
	fs.StringVar(&c.devicePluginDir, "device-plugin-dir", "", "device plugin directory: device plugins register on its kubelet.sock, and their resources join the node's capacity (upstream's is /var/lib/kubelet/device-plugins); default ROOT-DIR/device-plugins; set to \"\" for no device plugins")
	fs.BoolVar(&c.seccompDefault, "seccomp-default", false, "run containers that name no seccomp profile under the runtime's default profile (RuntimeDefault) instead of Unconfined, as upstream's --seccomp-default; Localhost profiles live under ROOT-DIR/seccomp")
	fs.StringVar(&c.kubeReserved, "kube-reserved", "", "resources kept for the node's daemons, off the allocatable the node reports and admits pods against (cpu=100m,memory=100Mi,ephemeral-storage=1Gi,pid=1000)")
	fs.StringVar(&c.systemReserved, "system-reserved", "", "resources kept for the system, off the allocatable as --kube-reserved")
	fs.StringVar(&c.evictionReclaim, "eviction-minimum-reclaim", "", "minimum reclaims (memory.available=0Mi,nodefs.available=500Mi,...)")
	fs.IntVar(&c.imageGCHigh, "image-gc-high-threshold", imagegc.DefaultHighThresholdPercent, "percent of the image filesystem in use at which unused images are removed (100 turns it off)")
	fs.IntVar(&c.imageGCLow, "image-gc-low-threshold", imagegc.DefaultLowThresholdPercent, "percent of the image filesystem in use that image garbage collection frees down to")
	fs.DurationVar(&c.imageMinTTL, "minimum-image-ttl-duration", imagegc.DefaultMinAge, "minimum age of an unused image before it may be removed")
	fs.BoolVar(&c.cgroupsPerQOS, "cgroups-per-qos", true, "put pods in upstream's cgroup hierarchy (kubepods, kubepods/burstable, kubepods/besteffort, a cgroup per pod with its CPU and memory limits), which needs root; only the pod cgroups this node made (recorded under ROOT-DIR/cgroups) are ever removed. "+
		"On by default with a real runtime; ignored on the embedded fake runtime; off unless given when the runtime at --container-runtime-endpoint says it is kubeletkit's fake (examples/fakecri), whose containers are no processes")
	fs.StringVar(&c.cgroupDriver, "cgroup-driver", "cgroupfs", "cgroup driver: cgroupfs, or systemd (slices created over systemd's D-Bus API); the runtime must use the same")
	fs.StringVar(&c.cgroupRoot, "cgroup-root", "", "cgroup the pods' hierarchy goes under (empty: /)")
	fs.StringVar(&c.enforceNodeAllocatable, "enforce-node-allocatable", "pods", "pods: limit the kubepods cgroup to the node's allocatable (capacity less --kube-reserved and --system-reserved), else its capacity; none (or empty) enforces nothing; the default is none with --cgroups-per-qos=false")
	fs.DurationVar(&c.shutdownGracePeriod, "shutdown-grace-period", 0, "upstream's shutdownGracePeriod: how long the node gives its pods when the machine shuts down (systemd-logind's PrepareForShutdown, under a delay inhibitor lock, as upstream; or --shutdown-signal), "+
		"terminating them lowest priority first; 0 turns graceful node shutdown off")
	fs.DurationVar(&c.shutdownGracePeriodCriticalPods, "shutdown-grace-period-critical-pods", 0, "upstream's shutdownGracePeriodCriticalPods: the part of --shutdown-grace-period kept for critical pods (priority 2000000000 and up), terminated last")
	fs.StringVar(&c.shutdownSignal, "shutdown-signal", "", "a signal that means the machine is shutting down (SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGINT): the node turns NotReady, refuses pods, "+
		"terminates its pods within --shutdown-grace-period, then minikubelet exits; needs --shutdown-grace-period, and replaces logind as the trigger. Without it SIGINT and SIGTERM stop minikubelet and leave the containers running")
	fs.Var(&c.clusterDNS, "cluster-dns", "IP addresses of the cluster's DNS servers, comma-separated, repeatable: the only nameservers of ClusterFirst pods (without: they get the host's, as Default pods)")
	fs.StringVar(&c.clusterDomain, "cluster-domain", "", "the cluster's DNS domain (cluster.local in most clusters): ClusterFirst pods search <namespace>.svc.<domain>, svc.<domain> and <domain> before the host's domains, and a pod's subdomain FQDN ends in it")
	fs.StringVar(&c.resolvConf, "resolv-conf", dns.DefaultResolvConf, "the host's resolver configuration, which Default pods get and whose search paths ClusterFirst pods get after the cluster's; \"\" means none (Default pods get nameserver 127.0.0.1)")
	fs.BoolVar(&c.verbose, "v", false, "debug logs")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: cutLongValues}))
	var client *cri.Client // nil with the embedded fake runtime
	if c.endpoint != "" {
		// First: which runtime it is decides the cgroup defaults.
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		client, err = cri.Dial(dctx, c.endpoint, cri.DialOptions{Logger: log})
		cancel()
		if err != nil {
			return err
		}
		defer client.Close()
		c.runtimeName = client.RuntimeVersion().GetRuntimeName()
	}
	opts, joined, err := options(c, stdout, log)
	if c.localState != nil {
		defer c.localState.Close()
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals(opts.Shutdown.Trigger)...)
	defer stop()
	var metrics *prometheus.Metrics
	late := &lateStats{}
	if opts.HTTP.Listen != "" || opts.HTTP.API != nil {
		if metrics, err = prometheus.New(prometheus.Options{Logger: log.With("component", "metrics")}); err != nil {
			return err
		}
		opts.Metrics, opts.HTTP.MetricsHandler = metrics, metrics.Handler()
		if opts.HTTP.ResourceMetricsHandler, err = prometheus.NewResourceHandler(late, prometheus.ResourceOptions{Logger: log.With("component", "resource-metrics")}); err != nil {
			return err
		}
	}
	if client != nil {
		opts.Runtime = client
		if metrics != nil {
			opts.Runtime = metrics.InstrumentRuntime(client)
		}
	}
	a, err := agent.New(opts)
	if err != nil {
		return err
	}
	late.Agent = a
	if metrics != nil {
		if err := metrics.RegisterNode(a); err != nil {
			return err
		}
	}
	runAgent := a.Run
	if joined != nil {
		runAgent = func(ctx context.Context) error { return joined.Run(ctx, a) }
	}
	if _, ok := opts.Shutdown.Trigger.(*nodeshutdown.Signal); ok {
		// The signal says the process goes too. After logind's, the
		// machine halts, or the shutdown is cancelled and the node serves
		// on, as upstream's kubelet.
		runAgent = exitAfterShutdown(a, runAgent, stdout)
	}
	if !c.runOnce {
		runtime := "the embedded fake runtime"
		if c.endpoint != "" {
			runtime = c.endpoint
		}
		fmt.Fprintf(stdout, "minikubelet: node %q, runtime %s, manifests %s", a.NodeName(), runtime, opts.Sources.ManifestPath)
		if opts.HTTP.Listen != "" {
			fmt.Fprintf(stdout, ", http://%s/pods", opts.HTTP.Listen)
		}
		if opts.HTTP.API != nil {
			fmt.Fprintf(stdout, ", kubelet API https://%s", opts.HTTP.API.Listen)
		}
		fmt.Fprintln(stdout)
		return runAgent(ctx)
	}
	return runOnce(ctx, a, runAgent, c.runOnceTimeout, stdout)
}

// ipList is a flag of IP addresses, comma-separated and repeatable, as
// upstream's --cluster-dns.
type ipList []string

// String lists the addresses.
func (l *ipList) String() string { return strings.Join(*l, ",") }

// Set adds the addresses of a value, refusing one that is not an IP.
func (l *ipList) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		s = strings.TrimSpace(s)
		if _, err := netip.ParseAddr(s); err != nil {
			return fmt.Errorf("%q is not an IP address", s)
		}
		*l = append(*l, s)
	}
	return nil
}

// options turns the flags into the agent's options, joined to the API
// server of --kubeconfig when there is one (nil otherwise), with the
// configuration the kubelet API's /configz shows.
func options(c *config, stdout io.Writer, log *slog.Logger) (agent.Options, *apiserver.Joined, error) {
	opts := agent.Options{NodeName: c.nodeName, RootDir: c.rootDir, Logger: log, EventedPLEG: c.evented,
		Sources: agent.SourceOptions{ManifestURL: c.manifestURL, ObjectPath: c.objectPath},
		Logs:    agent.LogOptions{Dir: c.podLogsDir, LinksDir: c.logLinksDir}}
	if !c.runOnce {
		opts.Out = stdout
	}
	if c.nodeIP != "" {
		opts.Node.HostIPs = []string{c.nodeIP}
	}
	opts.Node.ClusterDNS, opts.Node.ClusterDomain, opts.Node.ResolvConf = c.clusterDNS, c.clusterDomain, c.resolvConf
	if c.resolvConf == "" {
		opts.Node.ResolvConf = agent.ResolvConfNone // upstream's --resolv-conf=""
	}
	if err := apiOptions(c, &opts); err != nil {
		return agent.Options{}, nil, err
	}
	size, err := resource.ParseQuantity(c.containerLogMaxSize)
	if err != nil {
		return agent.Options{}, nil, fmt.Errorf("--container-log-max-size=%s: %w", c.containerLogMaxSize, err)
	}
	if c.containerLogMaxFiles < 2 {
		return agent.Options{}, nil, fmt.Errorf("--container-log-max-files=%d: must be at least 2", c.containerLogMaxFiles)
	}
	opts.Logs.MaxSize, opts.Logs.MaxFiles = size.Value(), c.containerLogMaxFiles
	if opts.Logs.MaxSize == 0 {
		opts.Logs.MaxSize = -1 // the flag's 0 is "never", the option's is the default
	}
	opts.Timings.NodeStatus = c.nodeStatusFrequency
	opts.ImageGC = imagegc.Policy{HighThresholdPercent: c.imageGCHigh, LowThresholdPercent: c.imageGCLow, MinAge: c.imageMinTTL}
	joined, err := join(c, &opts, log)
	if err != nil {
		return agent.Options{}, nil, err
	}
	if c.allowedUnsafeSysctls != "" {
		opts.Security.AllowedUnsafeSysctls = strings.Split(c.allowedUnsafeSysctls, ",")
	}
	if opts.Node.KubeReserved, err = parseReserved("kube-reserved", c.kubeReserved); err != nil {
		return agent.Options{}, nil, err
	}
	if opts.Node.SystemReserved, err = parseReserved("system-reserved", c.systemReserved); err != nil {
		return agent.Options{}, nil, err
	}
	opts.Security.SeccompDefault = c.seccompDefault
	if err := cgroupOptions(c, &opts); err != nil {
		return agent.Options{}, nil, err
	}
	if err := shutdownOptions(c, &opts); err != nil {
		return agent.Options{}, nil, err
	}
	opts.Node.DevicePluginDir = c.devicePluginDir
	if !c.set["device-plugin-dir"] {
		opts.Node.DevicePluginDir = filepath.Join(c.rootDir, "device-plugins")
	}
	opts.Eviction.Thresholds, err = eviction.ParseThresholds(c.evictionHard, c.evictionSoft, c.evictionSoftGrace, c.evictionReclaim)
	if err != nil {
		return agent.Options{}, nil, err
	}
	if opts.Eviction.Thresholds == nil {
		// Nil would mean the defaults; the user asked for none.
		opts.Eviction.Thresholds = []eviction.Threshold{}
	}
	opts.Sources.ManifestPath, err = manifestPath(c)
	if err != nil {
		return agent.Options{}, nil, err
	}
	if opts.HTTP.API != nil {
		kc, err := kubeletConfig(c, &opts)
		if err != nil {
			return agent.Options{}, nil, err
		}
		opts.HTTP.API.Configz = server.ConfigProviderFunc(func() (any, error) { return kc, nil })
	}
	return opts, joined, nil
}

// join joins the node to the API server of --kubeconfig and puts what it
// provides into opts; without --kubeconfig it refuses the flags that need
// one and returns nil.
func join(c *config, opts *agent.Options, log *slog.Logger) (*apiserver.Joined, error) {
	if c.kubeconfig == "" {
		for _, f := range []string{"node-labels", "register-node", "node-lease-duration-seconds", "kube-api-qps", "kube-api-burst", "local-state", "local-state-key-file"} {
			if c.set[f] {
				return nil, fmt.Errorf("--%s needs --kubeconfig", f)
			}
		}
		return nil, nil
	}
	labels, err := parseLabels(c.nodeLabels)
	if err != nil {
		return nil, err
	}
	if c.nodeLeaseSeconds <= 0 {
		return nil, fmt.Errorf("--node-lease-duration-seconds=%d: must be positive", c.nodeLeaseSeconds)
	}
	if !c.registerNode && len(labels) > 0 {
		return nil, errors.New("--node-labels are set when the Node is registered, and --register-node=false skips that")
	}
	opts.Node.Labels = labels // for the nodeSelectors admission matches
	if c.kubeAPIQPS <= 0 || c.kubeAPIBurst <= 0 {
		return nil, fmt.Errorf("--kube-api-qps=%g and --kube-api-burst=%d: both must be positive", c.kubeAPIQPS, c.kubeAPIBurst)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
	}
	// client-go's default limiter (5 queries per second, burst 10)
	// queues status patches, events and lease renewals behind each
	// other: 19 pods took 8s more to show Running than under upstream
	// kubelet, whose defaults these are.
	rc.QPS, rc.Burst = float32(c.kubeAPIQPS), c.kubeAPIBurst
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
	}
	nodeName := c.nodeName
	if nodeName == "" {
		// The agent's default, which Join needs first.
		if nodeName, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("node name: %w", err)
		}
	}
	jopts := apiserver.JoinOptions{NodeLabels: labels, SkipNodeRegistration: !c.registerNode,
		NodeLeaseDuration: time.Duration(c.nodeLeaseSeconds) * time.Second, Logger: log}
	if jopts.LocalState, err = openLocalState(c, log.With("component", "localstate")); err != nil {
		return nil, err
	}
	j, err := apiserver.Join(client, nodeName, jopts)
	if err != nil {
		return nil, err
	}
	if err := j.Apply(opts); err != nil {
		return nil, err
	}
	if opts.HTTP.API != nil {
		if c.tokenWebhook {
			if opts.HTTP.API.Authenticator, err = apiserver.NewTokenReviewAuthenticator(client.AuthenticationV1(), apiserver.TokenReviewOptions{}); err != nil {
				return nil, err
			}
		}
		if c.authorizationMode == "" || c.authorizationMode == "Webhook" {
			if opts.HTTP.API.Authorizer, err = apiserver.NewSubjectAccessReviewAuthorizer(client.AuthorizationV1(), apiserver.SubjectAccessReviewOptions{}); err != nil {
				return nil, err
			}
		}
	}
	return j, nil
}

// apiOptions puts the kubelet API and the read-only server the flags ask
// for into opts, as upstream kubelet's flags of the same names.
func apiOptions(c *config, opts *agent.Options) error {
	switch c.authorizationMode {
	case "", "AlwaysAllow":
	case "Webhook":
		if c.kubeconfig == "" {
			return errors.New("--authorization-mode=Webhook needs --kubeconfig")
		}
	default:
		return fmt.Errorf("--authorization-mode=%s: must be AlwaysAllow or Webhook", c.authorizationMode)
	}
	if c.tokenWebhook && c.kubeconfig == "" {
		return errors.New("--authentication-token-webhook needs --kubeconfig")
	}
	if (c.tlsCertFile == "") != (c.tlsKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if c.runOnce {
		return nil
	}
	if c.readOnlyPort != 0 {
		opts.HTTP.Listen = net.JoinHostPort(c.address, strconv.Itoa(c.readOnlyPort))
	}
	if c.port != 0 {
		opts.HTTP.API = &agent.APIOptions{Listen: net.JoinHostPort(c.address, strconv.Itoa(c.port)), Anonymous: c.anonymousAuth,
			TLS: server.TLSOptions{CertFile: c.tlsCertFile, KeyFile: c.tlsKeyFile, CertDir: c.certDir, ClientCAFile: c.clientCAFile}}
		if c.websockets {
			// As upstream kubelet 1.36: kubectl's WebSockets are translated
			// next to the runtime, and the API server told to send them on.
			opts.HTTP.API.WebSockets = websockets.Translator{}
			opts.Node.DeclaredFeatures = append(opts.Node.DeclaredFeatures, agent.ExtendWebSocketsToKubelet)
		}
	}
	return nil
}

// lateStats is the agent's Summary for the resource metrics handler, which
// is built before the agent is.
type lateStats struct{ *agent.Agent }

// Summary implements server.StatsProvider with the agent's.
func (l *lateStats) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error) {
	return l.API().Summary(ctx, onlyCPUAndMemory)
}

// parseReserved reads upstream's --kube-reserved and --system-reserved:
// "cpu=100m,memory=100Mi", of cpu, memory, ephemeral-storage and pid, each
// a quantity that is not negative.
func parseReserved(flag, s string) (v1.ResourceList, error) {
	if s == "" {
		return nil, nil
	}
	out := v1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--%s: %q is not resource=quantity", flag, kv)
		}
		switch name := v1.ResourceName(k); name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, "pid":
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("--%s: %s: %w", flag, k, err)
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("--%s: %s: %s is negative", flag, k, v)
			}
			out[name] = q
		default:
			return nil, fmt.Errorf("--%s: cannot reserve %q", flag, k)
		}
	}
	return out, nil
}

// parseLabels reads "key=value,key=value" (upstream's --node-labels).
func parseLabels(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--node-labels: %q is not key=value", kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--node-labels: key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("--node-labels: value %q of %s: %s", v, k, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// manifestPath picks the manifest directory: the flag, else
// examples/minikubelet/manifests under the working directory, else the embedded copy
// written under the root dir.
func manifestPath(c *config) (string, error) {
	if c.manifestPath != "" || c.manifestURL != "" || c.kubeconfig != "" {
		// With an API server, static pods are only those asked for.
		return c.manifestPath, nil
	}
	if st, err := os.Stat(defaultManifests); err == nil && st.IsDir() {
		return defaultManifests, nil
	}
	dir := filepath.Join(c.rootDir, "manifests")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	entries, err := fs.ReadDir(manifestsFS, "manifests")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		data, err := manifestsFS.ReadFile("manifests/" + e.Name())
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o640); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// runOnce runs the agent a with run until every pod has started (or
// ended, or was refused), prints the pods as a JSON v1.PodList, and stops
// the agent.
func runOnce(ctx context.Context, a *agent.Agent, run func(context.Context) error, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var pods []v1.Pod
	var waitErr error
wait:
	for {
		select {
		case err := <-done:
			return fmt.Errorf("agent stopped: %v", err)
		case <-deadline.C:
			waitErr = fmt.Errorf("runonce: not every pod started within %s", timeout)
			pods = a.PodStatuses()
			break wait
		case <-tick.C:
			pods = a.PodStatuses()
			if len(pods) > 0 && allStarted(pods) {
				break wait
			}
		}
	}
	cancel()
	err := <-done
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if encErr := enc.Encode(&v1.PodList{Items: pods}); encErr != nil {
		return encErr
	}
	return errors.Join(waitErr, err)
}

// allStarted reports whether every pod is Running, Succeeded or Failed.
func allStarted(pods []v1.Pod) bool {
	for _, p := range pods {
		switch p.Status.Phase {
		case v1.PodRunning, v1.PodSucceeded, v1.PodFailed:
		default:
			return false
		}
	}
	return true
}

// cgroupOptions sets the agent's cgroup options from the flags. A fake
// runtime's containers are no processes: on the embedded one the pods get
// no cgroups, and on a socket whose runtime says it is kubeletkit's fake
// (CRI Version: examples/fakecri's) --cgroups-per-qos is off unless given,
// and a line says so: an agent on a fake has no business with the host's
// cgroups. On a real runtime, --cgroups-per-qos (upstream's default) needs
// root, and says so.
func cgroupOptions(c *config, opts *agent.Options) error {
	opts.Cgroups.PerQOS = c.cgroupsPerQOS && c.endpoint != ""
	if opts.Cgroups.PerQOS && c.runtimeName == fake.DefaultRuntimeName && !c.set["cgroups-per-qos"] {
		opts.Cgroups.PerQOS = false
		opts.Logger.Warn("The runtime is kubeletkit's fake, whose containers are no processes: the pods get no cgroups (--cgroups-per-qos=true makes them)",
			"endpoint", c.endpoint, "runtime", c.runtimeName)
	}
	opts.Cgroups.Driver, opts.Cgroups.Root = c.cgroupDriver, c.cgroupRoot
	if c.enforceNodeAllocatable != "" {
		opts.Cgroups.EnforceNodeAllocatable = strings.Split(c.enforceNodeAllocatable, ",")
	}
	if !opts.Cgroups.PerQOS && (c.endpoint == "" || !c.set["enforce-node-allocatable"]) {
		opts.Cgroups.EnforceNodeAllocatable = nil
	}
	if opts.Cgroups.PerQOS && os.Geteuid() != 0 {
		return errors.New("--cgroups-per-qos creates the pods' cgroups, which needs root: run as root, or pass --cgroups-per-qos=false")
	}
	return nil
}

// shutdownSignals are the signals --shutdown-signal may name.
var shutdownSignals = map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP,
	"SIGQUIT": syscall.SIGQUIT, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2}

// shutdownOptions puts graceful node shutdown into opts: upstream's
// shutdownGracePeriod and shutdownGracePeriodCriticalPods (the agent checks
// them as upstream's validation does), triggered by systemd-logind as
// upstream's (nothing happens where there is no logind), or by
// --shutdown-signal instead.
func shutdownOptions(c *config, opts *agent.Options) error {
	opts.Shutdown.GracePeriod, opts.Shutdown.GracePeriodCriticalPods = c.shutdownGracePeriod, c.shutdownGracePeriodCriticalPods
	if c.shutdownSignal == "" {
		if c.shutdownGracePeriod > 0 {
			t, err := logind.New(logind.Options{GracePeriod: c.shutdownGracePeriod, Logger: opts.Logger.With("component", "logind")})
			if err != nil {
				return err
			}
			opts.Shutdown.Trigger = t
		}
		return nil
	}
	name := strings.ToUpper(c.shutdownSignal)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig, ok := shutdownSignals[name]
	if !ok {
		return fmt.Errorf("--shutdown-signal=%s: must be one of SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2", c.shutdownSignal)
	}
	if c.shutdownGracePeriod == 0 {
		return fmt.Errorf("--shutdown-signal=%s needs --shutdown-grace-period: without it a shutdown does nothing", c.shutdownSignal)
	}
	opts.Shutdown.Trigger = &nodeshutdown.Signal{Signals: []os.Signal{sig}}
	return nil
}

// stopSignals are the signals that stop minikubelet (containers left
// running): SIGINT and SIGTERM, but for the one trigger takes.
func stopSignals(trigger nodeshutdown.Trigger) []os.Signal {
	var taken os.Signal
	if s, ok := trigger.(*nodeshutdown.Signal); ok && len(s.Signals) == 1 {
		taken = s.Signals[0]
	}
	var out []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		if s != taken {
			out = append(out, s)
		}
	}
	return out
}

// shutdownDrain is how long minikubelet runs on once a shutdown has
// terminated the pods, so that their final statuses reach the API server
// (the status manager writes them asynchronously), as a machine takes a
// moment to halt after upstream's kubelet releases its inhibitor lock.
const shutdownDrain = 2 * time.Second

// exitAfterShutdown runs the agent until ctx ends, or until shutdownDrain
// after a shutdown has terminated the node's pods.
func exitAfterShutdown(a *agent.Agent, run func(context.Context) error, stdout io.Writer) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			select {
			case <-a.ShutdownDone():
			case <-ctx.Done():
				return
			}
			t := time.NewTimer(shutdownDrain)
			defer t.Stop()
			select {
			case <-t.C:
				fmt.Fprintln(stdout, "minikubelet: the node shut down; exiting")
				cancel()
			case <-ctx.Done():
			}
		}()
		err := run(ctx)
		cancel()
		<-stopped
		return err
	}
}

// openLocalState opens the node's local state of --local-state (default
// ROOT-DIR/localstate.db), or none when the flag is set to "". Its
// secrets and tokens are sealed with the key of --local-state-key-file,
// or not kept. A damaged file is moved aside and logged by the store, and
// an event recorded by Joined.Run.
func openLocalState(c *config, log *slog.Logger) (*localstate.State, error) {
	path := c.localStatePath
	if !c.set["local-state"] {
		path = filepath.Join(c.rootDir, "localstate.db")
	}
	if path == "" {
		if c.localStateKeyFile != "" {
			return nil, errors.New(`--local-state-key-file with --local-state "": there is no local state to seal`)
		}
		return nil, nil
	}
	var key localstate.SecretKey
	if c.localStateKeyFile != "" {
		var err error
		if key, err = localstate.ReadSecretKeyFile(c.localStateKeyFile); err != nil {
			return nil, fmt.Errorf("--local-state-key-file: %w", err)
		}
	}
	store, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: key, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--local-state: %w", err)
	}
	c.localState = store
	return localstate.New(store)
}

// maxLogValue is the longest string value minikubelet logs whole; longer
// ones (a 64 KiB image name that fails to pull on every retry) are cut.
const maxLogValue = 1024

// cutLongValues is the log handler's ReplaceAttr: a string value longer
// than maxLogValue keeps its first maxLogValue bytes (cut on a rune
// boundary) and says how many it dropped, and so does an error's message.
func cutLongValues(_ []string, a slog.Attr) slog.Attr {
	var s string
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		err, ok := v.Any().(error)
		if !ok || err == nil {
			return a
		}
		s = err.Error()
	default:
		return a
	}
	if len(s) <= maxLogValue {
		return a
	}
	cut := maxLogValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return slog.String(a.Key, fmt.Sprintf("%s...(%d more bytes)", s[:cut], len(s)-cut))
}
