package main

import (
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/certificate"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/kubeletconfig"
	"github.com/kubeletkit/kubeletkit/localstate"
)

// config is what the flags and the configuration files say.
type config struct {
	// kc is the configuration: --config, its defaults, --config-dir,
	// then the flags given.
	kc  *kubeletv1beta1.KubeletConfiguration
	cfg *kubeletconfig.Config // kc converted
	// node is the agent once built, for what /configz reports as it
	// runs (the cgroup driver the runtime told).
	node                                              *agent.Agent
	configFile, configDir                             string
	embedded                                          bool          // the embedded fake runtime, not kc's endpoint
	flags                                             *flag.FlagSet // the command line as parsed, for /flagz
	kubeconfig, nodeLabels, nodeIP, nodeName, rootDir string
	hostnameOverride, certDir, objectPath, linksDir   string
	runOnce, verbose                                  bool
	runOnceTimeout                                    time.Duration
	devicePluginDir, shutdownSignal                   string
	localStatePath, localStateKeyFile                 string
	credentialConfig, credentialBinDir                string           // image credential provider plugins
	localState                                        *localstate.Bolt // opened by join, closed by run
	bootstrapKubeconfig                               string
	certManagers                                      []certificate.Manager     // made by join, run by run
	clientRotation                                    *apiserver.ClientRotation // with rotateCertificates: made by join, run by run
	servingAddrs                                      *addressSource            // with serverTLSBootstrap: follows the agent run builds
	runtimeName                                       string                    // what the runtime at the endpoint said it is (CRI Version)
	set                                               map[string]bool           // the flags given

	// freshRoot: rootDir is this run's own (see freshRootDir), removed at
	// exit.
	freshRoot bool
}

// ownFlags are minikubelet's flags that are no field of a
// KubeletConfiguration (upstream kubelet's command-line-only flags, and
// minikubelet's own).
func ownFlags(fs *flag.FlagSet, c *config) {
	fs.StringVar(&c.configFile, "config", "", "a KubeletConfiguration (kubelet.config.k8s.io/v1beta1, YAML or JSON) as kubeadm and kind write to /var/lib/kubelet/config.yaml; the flags given override it. Without it, minikubelet's flag defaults apply (docs/kubeletconfig.md)")
	fs.StringVar(&c.configDir, "config-dir", "", "drop-in directory: its *.conf files, each a partial KubeletConfiguration, merged over --config in lexical order")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of an API server to join (pods bound to the node, statuses, the Node and its Lease, events, mirror pods); empty runs standalone")
	fs.StringVar(&c.nodeLabels, "node-labels", "", "labels added to the Node when it is registered (key=value,...)")
	fs.StringVar(&c.objectPath, "object-manifest-path", "", "directory of ConfigMap and Secret manifests (one per file) for pods' configMap, secret and projected volumes")
	fs.StringVar(&c.nodeName, "node-name", "", "node name (default: the host name)")
	fs.StringVar(&c.hostnameOverride, "hostname-override", "", "the node's name and kubernetes.io/hostname label instead of the host name, as upstream's --hostname-override")
	fs.StringVar(&c.rootDir, "root-dir", filepath.Join(os.TempDir(), "minikubelet"), "directory for pod data and logs; on the embedded fake runtime without --kubeconfig, the default is a fresh directory per run, removed at exit (the runtime's containers do not outlive the process)")
	fs.StringVar(&c.linksDir, "container-log-links-dir", "", "directory that gets a link to each container's log file, as upstream's /var/log/containers; empty: no links")
	fs.StringVar(&c.certDir, "cert-dir", "", "where the self-signed serving certificate, or the certificates by CSR (kubelet-client-current.pem, kubelet-server-current.pem), are kept (default ROOT-DIR/pki)")
	fs.StringVar(&c.bootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with a bootstrap token: when --kubeconfig is missing or its client certificate is not valid, a client certificate is asked for by CSR (kubernetes.io/kube-apiserver-client-kubelet), kept under --cert-dir, and --kubeconfig written to use it; a refused token or CSR is retried")
	fs.StringVar(&c.nodeIP, "node-ip", "", "the node's IP address, reported in its status and in the serving certificate (default: the machine's first non-loopback address)")
	fs.BoolVar(&c.runOnce, "runonce", false, "start the pods, wait until they run, print their statuses and exit")
	fs.DurationVar(&c.runOnceTimeout, "runonce-timeout", 2*time.Minute, "how long --runonce waits")
	fs.StringVar(&c.localStatePath, "local-state", "", "with --kubeconfig, the file (bbolt, 0600) where the node keeps the pods bound to it, the configMaps, secrets and tokens they read and the statuses the API server has not acknowledged, so that a restart while the API server does not answer runs the kept pods (docs/localstate.md); default ROOT-DIR/localstate.db; set to \"\" to keep nothing, as upstream kubelet")
	fs.StringVar(&c.localStateKeyFile, "local-state-key-file", "", "with --kubeconfig, a file (owner-only: 0600 or 0400) of the key that seals the secrets and service account tokens the local state keeps: 32 raw bytes or 64 hexadecimal digits (AES-256-GCM; head -c 32 /dev/urandom makes one); "+
		"keep it off the disk of the local state. Without it the local state keeps no secrets or tokens, and a pod that mounts one cannot have that volume set up again after a restart while the API server does not answer")
	fs.StringVar(&c.devicePluginDir, "device-plugin-dir", "", "device plugin directory: device plugins register on its kubelet.sock, and their resources join the node's capacity (upstream's is /var/lib/kubelet/device-plugins); default ROOT-DIR/device-plugins; set to \"\" for no device plugins")
	fs.StringVar(&c.shutdownSignal, "shutdown-signal", "", "a signal that means the machine is shutting down (SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGINT): the node turns NotReady, refuses pods, "+
		"terminates its pods within --shutdown-grace-period, then minikubelet exits; needs --shutdown-grace-period, and replaces logind as the trigger. Without it SIGINT and SIGTERM stop minikubelet and leave the containers running")
	fs.StringVar(&c.credentialConfig, "image-credential-provider-config", "", "a CredentialProviderConfig (kubelet.config.k8s.io/v1, YAML or JSON), or a directory of them (*.json, *.yaml, *.yml, merged in lexical order): the image credential provider plugins that give the node registry credentials for the images they match; needs --image-credential-provider-bin-dir")
	fs.StringVar(&c.credentialBinDir, "image-credential-provider-bin-dir", "", "directory of the image credential provider plugins, each an executable named as its provider in --image-credential-provider-config, which it needs")
	fs.BoolVar(&c.verbose, "v", false, "debug logs")
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

// configFlags binds the flags that are fields of upstream's
// KubeletConfiguration to kc, as upstream kubelet's flags of the same
// names: parsed over a configuration loaded from --config, only the flags
// given change it.
func configFlags(fs *flag.FlagSet, kc *kubeletv1beta1.KubeletConfiguration) {
	fs.Var(value[string]{&kc.ContainerRuntimeEndpoint, parseString[string]}, "container-runtime-endpoint", "CRI endpoint (unix:///run/containerd/containerd.sock); empty without --config runs the embedded fake runtime")
	fs.Var(value[string]{&kc.StaticPodPath, parseString[string]}, "pod-manifest-path", "directory (or file) of static pod manifests; empty without --config means examples/minikubelet/manifests when it exists, else the embedded copy")
	fs.Var(value[string]{&kc.StaticPodURL, parseString[string]}, "manifest-url", "URL of a pod or pod list to run")
	fs.Var(optional[int32]{&kc.KubeAPIQPS, parseInt32}, "kube-api-qps", "queries per second to the API server (client-go's limiter; upstream kubelet's default)")
	fs.Var(value[int32]{&kc.KubeAPIBurst, parseInt32}, "kube-api-burst", "burst of queries to the API server")
	fs.Var(optionalBool{optional[bool]{&kc.RegisterNode, strconv.ParseBool}}, "register-node", "register the Node with the API server; false updates the status of a Node someone else created")
	fs.Var(value[int32]{&kc.NodeLeaseDurationSeconds, parseInt32}, "node-lease-duration-seconds", "duration of the node's Lease, renewed every quarter of it")
	fs.Var(value[metav1.Duration]{&kc.NodeStatusUpdateFrequency, parseDuration}, "node-status-update-frequency", "how often the node's status is computed, and posted when it changed")
	fs.Var(value[string]{&kc.PodLogsDir, parseString[string]}, "pod-logs-dir", "directory of the containers' log files (upstream's podLogsDir, /var/log/pods there); empty without --config means ROOT-DIR/logs")
	fs.Var(value[string]{&kc.Address, parseString[string]}, "address", "address the kubelet API and the read-only server listen on")
	fs.Var(portValue{kc}, "port", "port of the kubelet API over TLS: logs, exec, attach, port-forward, stats (0: none)")
	healthzFlags(fs, kc)
	fs.Var(value[int32]{&kc.ReadOnlyPort, parseInt32}, "read-only-port", "port of the read-only HTTP server, without authentication: /pods (with the pods' environment), /healthz, /stats/summary, /metrics, /metrics/resource, /metrics/probes; 0, the default as in upstream's KubeletConfiguration, serves none (upstream's own port is 10255)")
	fs.Var(value[string]{&kc.TLSCertFile, parseString[string]}, "tls-cert-file", "serving certificate of the kubelet API (PEM, with its chain); empty: a self-signed one under --cert-dir")
	fs.Var(value[string]{&kc.TLSPrivateKeyFile, parseString[string]}, "tls-private-key-file", "key of --tls-cert-file")
	fs.Var(value[string]{&kc.Authentication.X509.ClientCAFile, parseString[string]}, "client-ca-file", "CA bundle that signs the client certificates the kubelet API accepts (the API server's kubelet-client certificate)")
	fs.Var(optionalBool{optional[bool]{&kc.Authentication.Anonymous.Enabled, strconv.ParseBool}}, "anonymous-auth", "let requests to the kubelet API without credentials in as system:anonymous")
	fs.Var(optionalBool{optional[bool]{&kc.Authentication.Webhook.Enabled, strconv.ParseBool}}, "authentication-token-webhook", "check bearer tokens with the API server's TokenReview (needs --kubeconfig)")
	fs.Var(value[kubeletv1beta1.KubeletAuthorizationMode]{&kc.Authorization.Mode, parseString[kubeletv1beta1.KubeletAuthorizationMode]}, "authorization-mode", "AlwaysAllow or Webhook (SubjectAccessReview; needs --kubeconfig); without --config, Webhook with --kubeconfig, else AlwaysAllow")
	fs.Var(boolValue{value[bool]{&kc.RotateCertificates, strconv.ParseBool}}, "rotate-certificates", "renew the client certificate by CSR before it expires (needs --kubeconfig naming CERT-DIR/kubelet-client-current.pem, as --bootstrap-kubeconfig writes it)")
	fs.Var(boolValue{value[bool]{&kc.ServerTLSBootstrap, strconv.ParseBool}}, "rotate-server-certificates", "the kubelet API's serving certificate by CSR (kubernetes.io/kubelet-serving, the node's name and IPs), renewed before it expires and served without a restart (needs --kubeconfig; serverTLSBootstrap)")
	fs.Var(value[string]{&kc.ContainerLogMaxSize, parseString[string]}, "container-log-max-size", "size at which a running container's log is rotated (a quantity; 0: never)")
	fs.Var(optional[int32]{&kc.ContainerLogMaxFiles, parseInt32}, "container-log-max-files", "how many files a container's log may have, the live one included (at least 2)")
	fs.Var(mapValue{m: &kc.EvictionHard, op: "<"}, "eviction-hard", "hard eviction thresholds (signal<quantity or percentage, comma-separated); an empty value turns threshold eviction off")
	fs.Var(mapValue{m: &kc.EvictionSoft, op: "<"}, "eviction-soft", "soft eviction thresholds, same syntax; each needs a grace period")
	fs.Var(mapValue{m: &kc.EvictionSoftGracePeriod, op: "="}, "eviction-soft-grace-period", "grace periods of the soft thresholds (memory.available=1m30s,...)")
	fs.Var(mapValue{m: &kc.EvictionMinimumReclaim, op: "="}, "eviction-minimum-reclaim", "minimum reclaims (memory.available=0Mi,nodefs.available=500Mi,...)")
	fs.Var(listValue{&kc.AllowedUnsafeSysctls}, "allowed-unsafe-sysctls", "unsafe sysctls pods may set beyond the safe set, comma-separated names or prefixes ending in * (kernel.msg*,net.core.somaxconn); only groups the kernel namespaces")
	fs.Var(optionalBool{optional[bool]{&kc.SeccompDefault, strconv.ParseBool}}, "seccomp-default", "run containers that name no seccomp profile under the runtime's default profile (RuntimeDefault) instead of Unconfined, as upstream's --seccomp-default; Localhost profiles live under ROOT-DIR/seccomp")
	fs.Var(mapValue{m: &kc.KubeReserved, op: "="}, "kube-reserved", "resources kept for the node's daemons, off the allocatable the node reports and admits pods against (cpu=100m,memory=100Mi,ephemeral-storage=1Gi,pid=1000)")
	fs.Var(mapValue{m: &kc.SystemReserved, op: "="}, "system-reserved", "resources kept for the system, off the allocatable as --kube-reserved")
	fs.Var(optional[int32]{&kc.ImageGCHighThresholdPercent, parseInt32}, "image-gc-high-threshold", "percent of the image filesystem in use at which unused images are removed (100 turns it off)")
	fs.Var(optional[int32]{&kc.ImageGCLowThresholdPercent, parseInt32}, "image-gc-low-threshold", "percent of the image filesystem in use that image garbage collection frees down to")
	fs.Var(value[metav1.Duration]{&kc.ImageMinimumGCAge, parseDuration}, "minimum-image-ttl-duration", "minimum age of an unused image before it may be removed")
	cgroupFlags(fs, kc)
	fs.Var(value[metav1.Duration]{&kc.ShutdownGracePeriod, parseDuration}, "shutdown-grace-period", "upstream's shutdownGracePeriod: how long the node gives its pods when the machine shuts down (systemd-logind's PrepareForShutdown, under a delay inhibitor lock, as upstream; or --shutdown-signal), "+
		"terminating them lowest priority first; 0 turns graceful node shutdown off")
	fs.Var(value[metav1.Duration]{&kc.ShutdownGracePeriodCriticalPods, parseDuration}, "shutdown-grace-period-critical-pods", "upstream's shutdownGracePeriodCriticalPods: the part of --shutdown-grace-period kept for critical pods (priority 2000000000 and up), terminated last")
	fs.Var(gate{kc, "EventedPLEG"}, "evented-pleg", "follow the runtime's container events instead of relisting every second (upstream's EventedPLEG feature gate)")
	fs.Var(gate{kc, "ExtendWebSocketsToKubelet"}, "extend-websockets-to-kubelet", "serve kubectl's WebSockets (exec, attach and cp over v5.channel.k8s.io, port-forward's SPDY tunnel) on the kubelet API with upstream kubelet's translator, "+
		"and declare the node feature ExtendWebSocketsToKubelet so that the API server sends them on instead of translating them itself (upstream's feature gate, on since 1.36)")
	fs.Var(value[int32]{&kc.MaxPods, parseInt32}, "max-pods", "the pods capacity the node reports and admits pods against")
	fs.Var(&ipList{l: &kc.ClusterDNS}, "cluster-dns", "IP addresses of the cluster's DNS servers, comma-separated, repeatable: the only nameservers of ClusterFirst pods (without: they get the host's, as Default pods)")
	fs.Var(value[string]{&kc.ClusterDomain, parseString[string]}, "cluster-domain", "the cluster's DNS domain (cluster.local in most clusters): ClusterFirst pods search <namespace>.svc.<domain>, svc.<domain> and <domain> before the host's domains, and a pod's subdomain FQDN ends in it")
	fs.Var(optional[string]{&kc.ResolverConfig, parseString[string]}, "resolv-conf", "the host's resolver configuration, which Default pods get and whose search paths ClusterFirst pods get after the cluster's ; \"\" means none (Default pods get nameserver 127.0.0.1)")
	fs.Var(taintsValue{&kc.RegisterWithTaints}, "register-with-taints", "taints of the Node when it is registered (key=value:Effect or key:Effect, comma-separated; needs --kubeconfig)")
	fs.Var(value[string]{&kc.ProviderID, parseString[string]}, "provider-id", "spec.providerID of the Node when it is registered (needs --kubeconfig)")
	fs.Var(optionalBool{optional[bool]{&kc.SerializeImagePulls, strconv.ParseBool}}, "serialize-image-pulls", "pull one image at a time (upstream's default; false without --max-parallel-image-pulls: no bound)")
	fs.Var(optional[int32]{&kc.MaxParallelImagePulls, parseInt32}, "max-parallel-image-pulls", "most image pulls at once, with --serialize-image-pulls=false")
}

// value is a flag of a field of type T, read by parse. Unlike
// flag.StringVar and its kin, defining it leaves the field alone, so that
// flags bound to a loaded configuration change only what is given.
type value[T any] struct {
	p     *T
	parse func(string) (T, error)
}

func (v value[T]) String() string {
	if v.p == nil {
		return ""
	}
	return show(*v.p)
}

func (v value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

// optional is a flag of an optional field (a pointer; nil is unset).
type optional[T any] struct {
	p     **T
	parse func(string) (T, error)
}

func (v optional[T]) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return show(**v.p)
}

func (v optional[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = &x
	return nil
}

// boolValue is a boolean flag, which may be given without a value.
type boolValue struct{ value[bool] }

// IsBoolFlag lets the flag be given without a value.
func (boolValue) IsBoolFlag() bool { return true }

// optionalBool is a boolean optional flag, which may be given without a
// value.
type optionalBool struct{ optional[bool] }

// IsBoolFlag lets the flag be given without a value.
func (optionalBool) IsBoolFlag() bool { return true }

// show spells a flag's value for the usage.
func show(v any) string {
	if d, ok := v.(metav1.Duration); ok {
		return d.Duration.String()
	}
	return fmt.Sprint(v)
}

// parseInt32, parseString and parseDuration read the values of the
// flags of value and optional.
func parseInt32(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
}

func parseString[T ~string](s string) (T, error) { return T(s), nil }

func parseDuration(s string) (metav1.Duration, error) {
	d, err := time.ParseDuration(s)
	return metav1.Duration{Duration: d}, err
}

// gate is a boolean flag that sets a feature gate.
type gate struct {
	kc   *kubeletv1beta1.KubeletConfiguration
	name string
}

func (g gate) String() string {
	if g.kc == nil {
		return ""
	}
	return strconv.FormatBool(g.kc.FeatureGates[g.name])
}

func (g gate) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if g.kc.FeatureGates == nil {
		g.kc.FeatureGates = map[string]bool{}
	}
	g.kc.FeatureGates[g.name] = b
	return nil
}

// IsBoolFlag lets the flag be given without a value.
func (gate) IsBoolFlag() bool { return true }

// portValue is --port: 0 turns the kubelet API off (enableServer false).
type portValue struct {
	kc *kubeletv1beta1.KubeletConfiguration
}

func (v portValue) String() string {
	if v.kc == nil {
		return ""
	}
	return strconv.Itoa(int(v.kc.Port))
}

func (v portValue) Set(s string) error {
	if err := (value[int32]{&v.kc.Port, parseInt32}).Set(s); err != nil {
		return err
	}
	v.kc.EnableServer = &[]bool{v.kc.Port != 0}[0]
	if v.kc.Port == 0 {
		v.kc.Port = 10250
	}
	return nil
}

// mapValue is a flag of "key<op>value,..." into a map; an empty value is
// an empty map (for --eviction-hard, no thresholds).
type mapValue struct {
	m  *map[string]string
	op string
}

func (v mapValue) String() string {
	if v.m == nil {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(*v.m)) {
		parts = append(parts, k+v.op+(*v.m)[k])
	}
	return strings.Join(parts, ",")
}

func (v mapValue) Set(s string) error {
	out := map[string]string{}
	if s != "" {
		for _, kv := range strings.Split(s, ",") {
			k, val, ok := strings.Cut(kv, v.op)
			if !ok || k == "" {
				return fmt.Errorf("%q is not key%svalue", kv, v.op)
			}
			out[k] = val
		}
	}
	*v.m = out
	return nil
}

// listValue is a comma-separated list flag; empty is an empty list.
type listValue struct{ l *[]string }

func (v listValue) String() string {
	if v.l == nil {
		return ""
	}
	return strings.Join(*v.l, ",")
}

func (v listValue) Set(s string) error {
	*v.l = []string{}
	if s != "" {
		*v.l = strings.Split(s, ",")
	}
	return nil
}

// taintsValue is --register-with-taints: "key=value:Effect,key:Effect".
type taintsValue struct{ t *[]v1.Taint }

func (v taintsValue) String() string {
	if v.t == nil {
		return ""
	}
	var parts []string
	for _, t := range *v.t {
		parts = append(parts, t.ToString())
	}
	return strings.Join(parts, ",")
}

func (v taintsValue) Set(s string) error {
	var out []v1.Taint
	for _, spec := range strings.Split(s, ",") {
		kv, effect, ok := strings.Cut(spec, ":")
		if !ok || effect == "" {
			return fmt.Errorf("%q is not key=value:Effect or key:Effect", spec)
		}
		k, val, _ := strings.Cut(kv, "=")
		out = append(out, v1.Taint{Key: k, Value: val, Effect: v1.TaintEffect(effect)})
	}
	*v.t = out
	return nil
}

// ipList is a flag of IP addresses, comma-separated and repeatable, as
// upstream's --cluster-dns: the first use replaces the configuration's
// list, the next ones add to it.
type ipList struct {
	l   *[]string
	set bool
}

// String lists the addresses.
func (v *ipList) String() string {
	if v.l == nil {
		return ""
	}
	return strings.Join(*v.l, ",")
}

// Set adds the addresses of a value, refusing one that is not an IP.
func (v *ipList) Set(s string) error {
	if !v.set {
		*v.l, v.set = nil, true
	}
	for a := range strings.SplitSeq(s, ",") {
		a = strings.TrimSpace(a)
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("%q is not an IP address", a)
		}
		*v.l = append(*v.l, a)
	}
	return nil
}
