package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/examples/prometheus"
	"github.com/kubeletkit/kubeletkit/examples/websockets"
	"github.com/kubeletkit/kubeletkit/kubeletconfig"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/server"
	"github.com/kubeletkit/kubeletkit/watchdog"
)

func main() {
	// run stops on SIGINT and SIGTERM (unless --shutdown-signal takes it).
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h, --help: the usage is printed, and asked for (exit 0, as upstream kubelet's)
		}
		fmt.Fprintln(os.Stderr, "minikubelet:", err)
		os.Exit(1)
	}
}

// parseFlags reads the flags and the configuration files as upstream
// kubelet does: the flags once, to find --config and --config-dir and the
// flags given; the files (kubeletconfig.Load); then the flags given again,
// over the files. Without --config, minikubelet's own defaults take the
// file's place.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	help := &kubeletv1beta1.KubeletConfiguration{}
	kubeletconfig.SetDefaults(help) // the defaults the usage shows: without --config, minikubelet's
	fs := flag.NewFlagSet("minikubelet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ownFlags(fs, c)
	if err := flagDefaults(c, help); err != nil {
		return nil, err
	}
	configFlags(fs, help)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	c.flags = fs
	if c.configFile == "" && c.kubeconfig == "" && !c.set["container-runtime-endpoint"] && !c.set["root-dir"] {
		root, err := freshRootDir()
		if err != nil {
			return nil, err
		}
		c.rootDir, c.freshRoot = root, true
	}
	kc, err := kubeletconfig.Load(kubeletconfig.Files{Config: c.configFile, DropInDir: c.configDir})
	if err != nil {
		return nil, err
	}
	if c.configFile == "" {
		if err := flagDefaults(c, kc); err != nil {
			return nil, err
		}
	}
	again := flag.NewFlagSet("minikubelet", flag.ContinueOnError)
	again.SetOutput(io.Discard)
	ownFlags(again, &config{})
	configFlags(again, kc)
	if err := again.Parse(args); err != nil {
		return nil, err
	}
	c.kc = kc
	c.embedded = c.configFile == "" && kc.ContainerRuntimeEndpoint == ""
	if c.configFile == "" && !c.set["enforce-node-allocatable"] && !*kc.CgroupsPerQOS {
		kc.EnforceNodeAllocatable = []string{"none"} // minikubelet's default without pod cgroups
	}
	if c.hostnameOverride != "" {
		if c.nodeName != "" && !strings.EqualFold(c.nodeName, c.hostnameOverride) {
			return nil, fmt.Errorf("--node-name=%s and --hostname-override=%s differ", c.nodeName, c.hostnameOverride)
		}
		c.nodeName = strings.ToLower(strings.TrimSpace(c.hostnameOverride))
	}
	return c, check(c)
}

// flagDefaults are minikubelet's defaults where they are not upstream's
// configuration's: the embedded fake runtime, logs under the root
// directory, no webhooks without an API server, no enforcement without
// pod cgroups, the example manifests.
func flagDefaults(c *config, kc *kubeletv1beta1.KubeletConfiguration) error {
	kc.ContainerRuntimeEndpoint = ""
	root, err := filepath.Abs(c.rootDir)
	if err != nil {
		return fmt.Errorf("--root-dir: %w", err)
	}
	kc.PodLogsDir = filepath.Join(root, "logs")
	kc.Authentication.Webhook.Enabled = ptr.To(false)
	kc.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
	if c.kubeconfig != "" {
		kc.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeWebhook
	}
	return nil
}

// check validates the configuration with upstream's messages, converts
// it (kubeletconfig.Convert refuses what the node lacks), and refuses what
// minikubelet cannot do with it: without --kubeconfig what needs an API
// server. Before any runtime is dialled.
func check(c *config) error {
	checked := *c.kc
	if c.embedded {
		checked.ContainerRuntimeEndpoint = "embedded" // no endpoint to check
	}
	if err := kubeletconfig.Validate(&checked); err != nil {
		return err
	}
	cfg, err := kubeletconfig.Convert(c.kc)
	if err != nil {
		return err
	}
	c.cfg = cfg
	if c.kubeconfig != "" {
		return nil
	}
	if cfg.Cluster.RotateCertificates { // serverTLSBootstrap: Standalone's
		return &kubeletconfig.UnsupportedError{Refused: []kubeletconfig.Refusal{{Field: "rotateCertificates", Value: "true", Why: "needs --kubeconfig"}}}
	}
	for _, f := range []string{"bootstrap-kubeconfig", "node-labels", "register-node", "node-lease-duration-seconds", "kube-api-qps", "kube-api-burst",
		"local-state", "local-state-key-file", "register-with-taints", "provider-id"} {
		if c.set[f] {
			return fmt.Errorf("--%s needs --kubeconfig", f)
		}
	}
	return cfg.Cluster.Standalone()
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if c.freshRoot {
		defer removeFreshRoot(c.rootDir, stderr)
	}
	level := slog.LevelWarn
	if c.verbose || c.kc.Logging.Verbosity > 0 {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: cutLongValues}))
	var client *cri.Client // nil with the embedded fake runtime
	if !c.embedded {
		// First: which runtime it is decides the cgroup defaults.
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		client, err = cri.Dial(dctx, c.kc.ContainerRuntimeEndpoint, cri.DialOptions{Logger: log, Timeout: c.kc.RuntimeRequestTimeout.Duration})
		cancel()
		if err != nil {
			return err
		}
		defer client.Close()
		c.runtimeName = client.RuntimeVersion().GetRuntimeName()
	}
	if err := bootstrap(ctx, c, log); err != nil {
		return err
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
		opts.Metrics, opts.HTTP.MetricsHandler, opts.HTTP.ProbeMetricsHandler = metrics, metrics.Handler(), metrics.ProbeHandler()
		if opts.HTTP.ResourceMetricsHandler, err = prometheus.NewResourceHandler(late, prometheus.ResourceOptions{Logger: log.With("component", "resource-metrics")}); err != nil {
			return err
		}
		if opts.HTTP.CadvisorMetricsHandler, err = prometheus.NewCadvisorHandler(late, late, prometheus.CadvisorOptions{Logger: log.With("component", "cadvisor-metrics"), Cgroups: late}); err != nil {
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
	c.node = a
	if c.servingAddrs != nil {
		c.servingAddrs.follow(a)
	}
	if metrics != nil {
		if err := metrics.RegisterNode(a); err != nil {
			return err
		}
		if err := metrics.RegisterVolumeStats(a.API()); err != nil {
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
	defer startCertificates(ctx, c)()
	if !c.runOnce {
		runtime := "the embedded fake runtime"
		if !c.embedded {
			runtime = c.kc.ContainerRuntimeEndpoint
		}
		fmt.Fprintf(stdout, "minikubelet: node %q, runtime %s, manifests %s, root %s", a.NodeName(), runtime, opts.Sources.ManifestPath, opts.RootDir)
		if opts.HTTP.Listen != "" {
			fmt.Fprintf(stdout, ", http://%s/pods", opts.HTTP.Listen)
		}
		if opts.HTTP.API != nil {
			fmt.Fprintf(stdout, ", kubelet API https://%s", opts.HTTP.API.Listen)
		}
		if opts.HTTP.Healthz != nil {
			fmt.Fprintf(stdout, ", healthz http://%s/healthz", opts.HTTP.Healthz.Listen)
		}
		fmt.Fprintln(stdout)
		ctx, cancel := context.WithCancel(ctx)
		defer notifyReady(ctx, a, watchdog.Systemd{}, log)()
		defer cancel()
		return runAgent(ctx)
	}
	return runOnce(ctx, a, runAgent, c.runOnceTimeout, stdout)
}

// options turns the configuration into the agent's options
// (kubeletconfig.Convert), adds what only minikubelet knows (the root
// directory, the runtime it dialled, the WebSocket translator, the
// shutdown trigger), and joins the API server of --kubeconfig when there
// is one (nil otherwise), with the configuration /configz shows.
func options(c *config, stdout io.Writer, log *slog.Logger) (agent.Options, *apiserver.Joined, error) {
	cfg := c.cfg
	opts := cfg.Agent
	opts.NodeName, opts.RootDir, opts.Logger = c.nodeName, c.rootDir, log
	if c.freshRoot {
		opts.Security.NoMounts = true // nothing mounted under a root removed at exit
	}
	opts.Sources.ObjectPath, opts.Logs.LinksDir = c.objectPath, c.linksDir
	if c.nodeIP != "" {
		opts.Node.HostIPs = []string{c.nodeIP}
	}
	if c.runOnce {
		opts.HTTP = agent.HTTPOptions{}
	} else {
		opts.Out = stdout
		// As upstream's kubelet, always: ROOT-DIR/pod-resources/kubelet.sock.
		opts.HTTP.PodResources = true
	}
	if api := opts.HTTP.API; api != nil {
		api.TLS.CertDir = c.certDir
		// /flagz lists every flag with its value, as upstream's lists its
		// flag sets; none holds a secret.
		api.Flags = server.FlagSetReader{FlagSet: c.flags}
		if cfg.FeatureGates[agent.ExtendWebSocketsToKubelet] {
			// As upstream kubelet 1.36: kubectl's WebSockets are translated
			// next to the runtime, and the agent tells the API server
			// (status.declaredFeatures) to send them on.
			api.WebSockets = websockets.Translator{}
		}
	}
	if err := cgroupOptions(c, &opts); err != nil {
		return agent.Options{}, nil, err
	}
	if err := shutdownOptions(c, &opts); err != nil {
		return agent.Options{}, nil, err
	}
	if err := watchdogOptions(c, &opts); err != nil {
		return agent.Options{}, nil, err
	}
	opts.Node.DevicePluginDir = c.devicePluginDir
	if !c.set["device-plugin-dir"] {
		opts.Node.DevicePluginDir = filepath.Join(c.rootDir, "device-plugins")
	}
	var err error
	if opts.Sources.ManifestPath, err = manifestPath(c); err != nil {
		return agent.Options{}, nil, err
	}
	joined, err := join(c, cfg.Cluster, &opts, log)
	if err != nil {
		return agent.Options{}, nil, err
	}
	if opts.Node.ImageCredentials, err = imageCredentials(c, joined, log); err != nil {
		return agent.Options{}, nil, err
	}
	if opts.HTTP.API != nil {
		kc, err := kubeletConfig(c, &opts)
		if err != nil {
			return agent.Options{}, nil, err
		}
		opts.HTTP.API.Configz = server.ConfigProviderFunc(func() (any, error) { return runningConfig(kc, c.node), nil })
	}
	return opts, joined, nil
}

// join joins the node to the API server of --kubeconfig with the
// configuration's cluster settings and puts what it provides into opts;
// without --kubeconfig it returns nil.
func join(c *config, cl kubeletconfig.ClusterConfig, opts *agent.Options, log *slog.Logger) (*apiserver.Joined, error) {
	if c.kubeconfig == "" {
		return nil, nil
	}
	labels, err := parseLabels(c.nodeLabels)
	if err != nil {
		return nil, err
	}
	if !cl.RegisterNode && len(labels) > 0 {
		return nil, errors.New("--node-labels are set when the Node is registered, and --register-node=false skips that")
	}
	opts.Node.Labels = labels // for the nodeSelectors admission matches
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
	}
	// client-go's default limiter (5 queries per second, burst 10)
	// queues status patches, events and lease renewals behind each
	// other: 19 pods took 8s more to show Running than under upstream
	// kubelet, whose defaults (kubeAPIQPS, kubeAPIBurst) these are.
	rc.QPS, rc.Burst, rc.ContentType = cl.KubeAPIQPS, cl.KubeAPIBurst, cl.ContentType
	nodeName, err := nodeNameOf(c) // the agent's default, which Join needs first
	if err != nil {
		return nil, err
	}
	if rc, err = clientRotation(c, cl, nodeName, rc, log); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
	}
	jopts := apiserver.JoinOptions{NodeLabels: labels, NodeTaints: cl.RegisterWithTaints, ProviderID: cl.ProviderID,
		SkipNodeRegistration: !cl.RegisterNode, NodeLeaseDuration: cl.NodeLeaseDuration, Logger: log}
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
	if err := servingCertificates(c, cl, client, nodeName, opts, log); err != nil {
		return nil, err
	}
	if opts.HTTP.API != nil {
		if cl.WebhookAuthentication {
			if opts.HTTP.API.Authenticator, err = apiserver.NewTokenReviewAuthenticator(client.AuthenticationV1(),
				apiserver.TokenReviewOptions{CacheTTL: cl.WebhookAuthenticationCacheTTL}); err != nil {
				return nil, err
			}
		}
		if cl.WebhookAuthorization {
			if opts.HTTP.API.Authorizer, err = apiserver.NewSubjectAccessReviewAuthorizer(client.AuthorizationV1(),
				apiserver.SubjectAccessReviewOptions{AllowCacheTTL: cl.AuthorizedTTL, DenyCacheTTL: cl.UnauthorizedTTL}); err != nil {
				return nil, err
			}
		}
	}
	return j, nil
}

// lateStats is the agent's Summary, usage, cgroup stats and machine for
// the resource and cAdvisor metrics handlers, which are built before the
// agent is.
type lateStats struct{ *agent.Agent }

// Summary implements server.StatsProvider with the agent's.
func (l *lateStats) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error) {
	return l.API().Summary(ctx, onlyCPUAndMemory)
}

// Capacity implements node.Machine with the agent's machine.
func (l *lateStats) Capacity(ctx context.Context) (v1.ResourceList, error) {
	return l.Machine().Capacity(ctx)
}

// SystemInfo implements node.Machine with the agent's machine.
func (l *lateStats) SystemInfo(ctx context.Context) (v1.NodeSystemInfo, error) {
	return l.Machine().SystemInfo(ctx)
}
