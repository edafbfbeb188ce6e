package kubeletconfig

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/server"
)

// ErrUnsupported is wrapped by UnsupportedError.
var ErrUnsupported = errors.New("not supported by this node")

// Refusal is one field Convert refuses: its JSON path and value.
type Refusal struct {
	// Field is the field's JSON name, with its parents' for a nested one
	// ("authentication.webhook.enabled", "featureGates.CPUManager").
	Field string
	// Value is the value it was given, as JSON.
	Value string
	// Why says what the node lacks, where that helps; empty otherwise.
	Why string
}

// UnsupportedError lists every field a configuration sets that the node
// does not implement. It wraps ErrUnsupported.
type UnsupportedError struct {
	// Refused are the fields, in the order of the type's fields.
	Refused []Refusal
}

// Error lists the fields.
func (e *UnsupportedError) Error() string {
	parts := make([]string, 0, len(e.Refused))
	for _, r := range e.Refused {
		s := fmt.Sprintf("%s %s: %s", r.Field, r.Value, ErrUnsupported)
		if r.Why != "" {
			s += " (" + r.Why + ")"
		}
		parts = append(parts, s)
	}
	return "kubelet config: " + strings.Join(parts, "; ")
}

// Unwrap returns ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// Fields are the refused fields' names.
func (e *UnsupportedError) Fields() []string {
	out := make([]string, 0, len(e.Refused))
	for _, r := range e.Refused {
		out = append(out, r.Field)
	}
	return out
}

// Config is a KubeletConfiguration as an agent takes it.
type Config struct {
	// Agent are the agent's options. The caller adds what a file cannot
	// say (a Logger, a Runtime, Cluster from an API server's client) and
	// may change any of them.
	Agent agent.Options
	// RuntimeEndpoint is the CRI endpoint to dial (containerRuntimeEndpoint),
	// and RuntimeRequestTimeout the timeout of its calls
	// (runtimeRequestTimeout; cri.DialOptions.Timeout).
	RuntimeEndpoint       string
	RuntimeRequestTimeout time.Duration
	// Cluster is what only a client of an API server honours.
	Cluster ClusterConfig
	// Verbosity is logging.verbosity, for the caller's logger.
	Verbosity int
	// FeatureGates are the gates the node runs with: the 1.36 defaults of
	// those this package knows, overridden by featureGates. The caller
	// honours ExtendWebSocketsToKubelet (a WebSocket translator on the
	// kubelet API, and the declared node feature).
	FeatureGates map[string]bool
}

// ClusterConfig are the settings of a KubeletConfiguration that a client
// of the API server carries out, not the agent: examples/apiserver's Join
// takes them. A caller without an API server refuses those that are not
// off (Standalone).
type ClusterConfig struct {
	// KubeAPIQPS and KubeAPIBurst rate-limit the client (kubeAPIQPS,
	// kubeAPIBurst); ContentType is its content type (contentType).
	KubeAPIQPS   float32
	KubeAPIBurst int
	ContentType  string
	// RegisterNode creates the Node (registerNode), with RegisterWithTaints
	// (registerWithTaints) and ProviderID (providerID).
	RegisterNode       bool
	RegisterWithTaints []v1.Taint
	ProviderID         string
	// NodeLeaseDuration is the lease's duration (nodeLeaseDurationSeconds),
	// also in Agent.Cluster.LeaseDuration.
	NodeLeaseDuration time.Duration
	// WebhookAuthentication checks bearer tokens with TokenReview
	// (authentication.webhook.enabled), caching answers for
	// WebhookAuthenticationCacheTTL (authentication.webhook.cacheTTL).
	WebhookAuthentication         bool
	WebhookAuthenticationCacheTTL time.Duration
	// WebhookAuthorization authorizes with SubjectAccessReview
	// (authorization.mode Webhook), caching allowed and denied answers
	// (authorization.webhook.cacheAuthorizedTTL, cacheUnauthorizedTTL).
	WebhookAuthorization           bool
	AuthorizedTTL, UnauthorizedTTL time.Duration
	// RotateCertificates and ServerTLSBootstrap are rotateCertificates and
	// serverTLSBootstrap: client and serving certificates by CSR.
	RotateCertificates, ServerTLSBootstrap bool
}

// Standalone refuses the settings of c that need an API server, for a
// caller that has none, as upstream's kubelet refuses webhook
// authentication without a client.
func (c ClusterConfig) Standalone() error {
	var r []Refusal
	add := func(on bool, field, value string) {
		if on {
			r = append(r, Refusal{Field: field, Value: value, Why: "needs an API server"})
		}
	}
	add(c.WebhookAuthentication, "authentication.webhook.enabled", "true")
	add(c.WebhookAuthorization, "authorization.mode", strconv.Quote(string(kubeletv1beta1.KubeletAuthorizationModeWebhook)))
	add(len(c.RegisterWithTaints) > 0, "registerWithTaints", jsonValue(c.RegisterWithTaints))
	add(c.ProviderID != "", "providerID", strconv.Quote(c.ProviderID))
	add(c.ServerTLSBootstrap, "serverTLSBootstrap", "true")
	if len(r) == 0 {
		return nil
	}
	return &UnsupportedError{Refused: r}
}

// Gates the node honours, by name: what each turns on.
var honouredGates = map[string]bool{
	"CustomCPUCFSQuotaPeriod":                 true, // validation: cpuCFSQuotaPeriod other than 100ms needs it
	"DisableCPUQuotaWithExclusiveCPUs":        true, // Resources.KeepCPUQuotaWithExclusiveCPUs (false)
	"EventedPLEG":                             true, // Agent.EventedPLEG
	"ExtendWebSocketsToKubelet":               true, // the caller's WebSocket translator
	"GracefulNodeShutdown":                    true, // locked on upstream
	"GracefulNodeShutdownBasedOnPodPriority":  true, // Shutdown.ByPodPriority
	"KubeletCrashLoopBackOffMax":              true, // Node.MaxContainerRestartPeriod
	"KubeletEnsureSecretPulledImages":         true, // Node.PulledImages (false: Off)
	"KubeletPodResourcesListUseActivePods":    true, // HTTP.PodResourcesListAllPods (false)
	"NodeLogQuery":                            true, // validation: enableSystemLogQuery needs it
	"InPlacePodLevelResourcesVerticalScaling": true, // Resources.DisablePodLevelResize (false)
	"PodLevelResources":                       true, // Resources.DisablePodLevelResources (false)
}

// Convert turns a defaulted, validated configuration into the agent's
// options. Every field the node implements is mapped; every other field
// that differs from upstream's default is refused, all in one
// *UnsupportedError, joined with the errors of values that cannot be
// read (a quantity, an eviction threshold, a TLS version). kc is not
// changed.
func Convert(kc *kubeletv1beta1.KubeletConfiguration) (*Config, error) {
	c := &converter{kc: kc, cfg: &Config{}}
	c.sources()
	c.http()
	c.cluster()
	c.node()
	c.resources()
	c.dns()
	c.pods()
	c.logs()
	c.checkGates()
	c.checkRest()
	if len(c.refused) > 0 {
		c.errs = append(c.errs, &UnsupportedError{Refused: c.refused})
	}
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return c.cfg, nil
}

// converter holds Convert's work.
type converter struct {
	kc      *kubeletv1beta1.KubeletConfiguration
	cfg     *Config
	refused []Refusal
	errs    []error // values the fields cannot have
}

// invalid records a value a field cannot have.
func (c *converter) invalid(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("kubelet config: "+format, args...))
}

// refuse records a refused field.
func (c *converter) refuse(field string, value any, why string) {
	c.refused = append(c.refused, Refusal{Field: field, Value: jsonValue(value), Why: why})
}

// jsonValue is v as JSON.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// sources maps the static pod sources and their periods.
func (c *converter) sources() {
	kc, o := c.kc, &c.cfg.Agent
	o.Sources.ManifestPath = kc.StaticPodPath
	o.Sources.ManifestURL = kc.StaticPodURL
	o.Timings.Resync = kc.SyncFrequency.Duration
	o.Timings.SourcePeriod = kc.FileCheckFrequency.Duration
	if kc.HTTPCheckFrequency != kc.FileCheckFrequency {
		c.refuse("httpCheckFrequency", kc.HTTPCheckFrequency, "the node reads the manifest directory and URL on one period, fileCheckFrequency")
	}
	o.Timings.NodeStatus = kc.NodeStatusUpdateFrequency.Duration
	o.Timings.NodeStatusReport = kc.NodeStatusReportFrequency.Duration
	o.Logs.Dir = kc.PodLogsDir
}

// http maps the read-only server, the healthz port and the kubelet API.
func (c *converter) http() {
	kc, o := c.kc, &c.cfg.Agent
	if kc.ReadOnlyPort != 0 {
		o.HTTP.Listen = net.JoinHostPort(kc.Address, strconv.Itoa(int(kc.ReadOnlyPort)))
	}
	if p := deref(kc.HealthzPort); p != 0 {
		o.HTTP.Healthz = &agent.HealthzOptions{Listen: net.JoinHostPort(kc.HealthzBindAddress, strconv.Itoa(int(p)))}
	}
	if !deref(kc.EnableServer) {
		return
	}
	api := &agent.APIOptions{Listen: net.JoinHostPort(kc.Address, strconv.Itoa(int(kc.Port))),
		Anonymous: deref(kc.Authentication.Anonymous.Enabled),
		TLS: server.TLSOptions{CertFile: kc.TLSCertFile, KeyFile: kc.TLSPrivateKeyFile,
			ClientCAFile: kc.Authentication.X509.ClientCAFile}}
	if (kc.TLSCertFile == "") != (kc.TLSPrivateKeyFile == "") {
		c.invalid("tlsCertFile %q and tlsPrivateKeyFile %q: both or neither", kc.TLSCertFile, kc.TLSPrivateKeyFile)
	}
	if kc.TLSMinVersion != "" {
		v, ok := tlsVersions[kc.TLSMinVersion]
		if !ok {
			c.invalid("tlsMinVersion %q: must be VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13", kc.TLSMinVersion)
		}
		api.TLS.MinVersion = v
	}
	for _, name := range kc.TLSCipherSuites {
		id, ok := cipherSuite(name)
		if !ok {
			c.invalid("tlsCipherSuites: %q is not a cipher suite Go's TLS knows", name)
			continue
		}
		api.TLS.CipherSuites = append(api.TLS.CipherSuites, id)
	}
	// enableSystemLogHandler (on by default) serves the node's log
	// directory under /logs/; enableSystemLogQuery (which validation ties
	// to it and to the NodeLogQuery gate) adds its ?query=.
	if deref(kc.EnableSystemLogHandler) {
		api.NodeLogDir = NodeLogDir
		api.NodeLogQuery = deref(kc.EnableSystemLogQuery)
	}
	o.HTTP.API = api
}

// NodeLogDir is the node's log directory the kubelet API serves under
// /logs/, upstream's.
const NodeLogDir = "/var/log/"

// tlsVersions are tlsMinVersion's values.
var tlsVersions = map[string]uint16{"VersionTLS10": tls.VersionTLS10, "VersionTLS11": tls.VersionTLS11,
	"VersionTLS12": tls.VersionTLS12, "VersionTLS13": tls.VersionTLS13}

// cipherSuite is the ID of the IANA-named suite.
func cipherSuite(name string) (uint16, bool) {
	for _, s := range slices.Concat(tls.CipherSuites(), tls.InsecureCipherSuites()) {
		if s.Name == name {
			return s.ID, true
		}
	}
	return 0, false
}

// cluster maps what a client of the API server carries out.
func (c *converter) cluster() {
	kc, cl := c.kc, &c.cfg.Cluster
	cl.KubeAPIQPS, cl.KubeAPIBurst, cl.ContentType = float32(deref(kc.KubeAPIQPS)), int(kc.KubeAPIBurst), kc.ContentType
	cl.RegisterNode = deref(kc.RegisterNode)
	cl.RegisterWithTaints = slices.Clone(kc.RegisterWithTaints)
	cl.ProviderID = kc.ProviderID
	cl.NodeLeaseDuration = time.Duration(kc.NodeLeaseDurationSeconds) * time.Second
	c.cfg.Agent.Cluster.LeaseDuration = cl.NodeLeaseDuration
	cl.WebhookAuthentication = deref(kc.Authentication.Webhook.Enabled)
	cl.WebhookAuthenticationCacheTTL = kc.Authentication.Webhook.CacheTTL.Duration
	switch kc.Authorization.Mode {
	case kubeletv1beta1.KubeletAuthorizationModeWebhook:
		cl.WebhookAuthorization = true
	case kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow:
	default:
		c.invalid("authorization.mode %q: must be AlwaysAllow or Webhook", kc.Authorization.Mode)
	}
	cl.AuthorizedTTL = kc.Authorization.Webhook.CacheAuthorizedTTL.Duration
	cl.UnauthorizedTTL = kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration
	cl.RotateCertificates, cl.ServerTLSBootstrap = kc.RotateCertificates, kc.ServerTLSBootstrap
	c.cfg.RuntimeEndpoint = kc.ContainerRuntimeEndpoint
	c.cfg.RuntimeRequestTimeout = kc.RuntimeRequestTimeout.Duration
	c.cfg.Verbosity = int(kc.Logging.Verbosity)
	if kc.Logging.Format != "text" {
		c.refuse("logging.format", kc.Logging.Format, "the caller's slog handler writes the logs")
	}
}

// node maps the node's own behaviour: cgroups, security, shutdown, the
// feature gates it honours.
func (c *converter) node() {
	kc, o := c.kc, &c.cfg.Agent
	g := gates(kc)
	c.cfg.FeatureGates = g
	o.EventedPLEG = g["EventedPLEG"]
	o.Resources.KeepCPUQuotaWithExclusiveCPUs = !g["DisableCPUQuotaWithExclusiveCPUs"]
	o.Resources.DisablePodLevelResources = !g["PodLevelResources"]
	o.Resources.DisablePodLevelResize = !g["InPlacePodLevelResourcesVerticalScaling"]
	o.HTTP.PodResourcesListAllPods = !g["KubeletPodResourcesListUseActivePods"]
	o.Cgroups.PerQOS = deref(kc.CgroupsPerQOS)
	o.Cgroups.Driver = kc.CgroupDriver
	o.Cgroups.Root = kc.CgroupRoot
	o.Cgroups.PodPidsLimit = deref(kc.PodPidsLimit)
	o.Cgroups.CPUCFSQuotaPeriod = deref(kc.CPUCFSQuotaPeriod).Duration
	c.resourceManagers()
	for _, e := range kc.EnforceNodeAllocatable {
		switch e {
		case enforcePods, enforceNone:
		default:
			c.refuse("enforceNodeAllocatable", e, "the node does not manage the reserved daemons' cgroups")
		}
	}
	if !slices.Equal(kc.EnforceNodeAllocatable, []string{enforceNone}) {
		o.Cgroups.EnforceNodeAllocatable = slices.Clone(kc.EnforceNodeAllocatable)
	}
	o.Security.AllowedUnsafeSysctls = slices.Clone(kc.AllowedUnsafeSysctls)
	o.Security.SeccompDefault = deref(kc.SeccompDefault)
	o.Shutdown.GracePeriod = kc.ShutdownGracePeriod.Duration
	o.Shutdown.GracePeriodCriticalPods = kc.ShutdownGracePeriodCriticalPods.Duration
	for _, p := range kc.ShutdownGracePeriodByPodPriority {
		o.Shutdown.ByPodPriority = append(o.Shutdown.ByPodPriority,
			nodeshutdown.PriorityGracePeriod{Priority: p.Priority, GracePeriodSeconds: p.ShutdownGracePeriodSeconds})
	}
	if p := kc.CrashLoopBackOff.MaxContainerRestartPeriod; p != nil {
		// The crash loop's alone: image pulls keep their back-off.
		o.Node.MaxContainerRestartPeriod = p.Duration
	}
	o.ImageGC = imagegc.Policy{HighThresholdPercent: int(deref(kc.ImageGCHighThresholdPercent)),
		LowThresholdPercent: int(deref(kc.ImageGCLowThresholdPercent)),
		MinAge:              kc.ImageMinimumGCAge.Duration, MaxAge: kc.ImageMaximumGCAge.Duration}
	o.Eviction.PressureTransitionPeriod = kc.EvictionPressureTransitionPeriod.Duration
}

// dns maps the pods' resolver configuration.
func (c *converter) dns() {
	kc, o := c.kc, &c.cfg.Agent
	for _, ip := range kc.ClusterDNS {
		if _, err := netip.ParseAddr(ip); err != nil {
			c.invalid("clusterDNS: %q is not an IP address", ip)
		}
	}
	o.Node.ClusterDNS = slices.Clone(kc.ClusterDNS)
	o.Node.ClusterDomain = kc.ClusterDomain
	switch r := deref(kc.ResolverConfig); r {
	case "":
		o.Node.ResolvConf = agent.ResolvConfNone // upstream's resolvConf ""
	default:
		o.Node.ResolvConf = r
	}
}

// pods maps the pods capacity, the bound on image pulls and the records of
// pulled images.
func (c *converter) pods() {
	kc, o := c.kc, &c.cfg.Agent
	o.Node.MaxPods = int64(kc.MaxPods)
	switch {
	case deref(kc.SerializeImagePulls):
		o.Node.MaxParallelImagePulls = 0 // one at a time
	case kc.MaxParallelImagePulls != nil:
		o.Node.MaxParallelImagePulls = *kc.MaxParallelImagePulls
	default:
		o.Node.MaxParallelImagePulls = -1 // no bound
	}
	// Which credentials pulled which image (KubeletEnsureSecretPulledImages).
	if !gates(kc)["KubeletEnsureSecretPulledImages"] {
		o.Node.PulledImages.Off = true
		return
	}
	o.Node.PulledImages.VerificationPolicy = pullrecords.Policy(kc.ImagePullCredentialsVerificationPolicy)
	o.Node.PulledImages.Allowlist = slices.Clone(kc.PreloadedImagesVerificationAllowlist)
}

// resources maps the reservations and the eviction thresholds.
func (c *converter) resources() {
	kc, o := c.kc, &c.cfg.Agent
	var err error
	if o.Node.KubeReserved, err = Reserved("kubeReserved", kc.KubeReserved); err != nil {
		c.invalid("%w", err)
	}
	if o.Node.SystemReserved, err = Reserved("systemReserved", kc.SystemReserved); err != nil {
		c.invalid("%w", err)
	}
	if n := o.Resources.ReservedSystemCPUs.Size(); n > 0 {
		// As upstream's kubelet: reservedSystemCPUs replaces the cpu of
		// kubeReserved and systemReserved, its CPUs counted as system
		// reserved, so that the node's allocatable leaves them out.
		delete(o.Node.KubeReserved, v1.ResourceCPU)
		if o.Node.SystemReserved == nil {
			o.Node.SystemReserved = v1.ResourceList{}
		}
		o.Node.SystemReserved[v1.ResourceCPU] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	hard := kc.EvictionHard
	if deref(kc.MergeDefaultEvictionSettings) {
		hard = maps.Clone(hard)
		for k, v := range DefaultEvictionHard() {
			if _, ok := hard[k]; !ok {
				hard[k] = v
			}
		}
	}
	ts, err := eviction.ParseThresholds(statements(hard, "<"), statements(kc.EvictionSoft, "<"),
		statements(kc.EvictionSoftGracePeriod, "="), statements(kc.EvictionMinimumReclaim, "="))
	if err != nil {
		c.invalid("eviction thresholds: %w", err)
		return
	}
	if ts == nil {
		// Nil would be the defaults; the configuration asks for none.
		ts = []eviction.Threshold{}
	}
	o.Eviction.Thresholds = ts
}

// statements spells a map of upstream's configuration as its flag does:
// "key<value,..." or "key=value,...", sorted.
func statements(m map[string]string, op string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+op+m[k])
	}
	return strings.Join(parts, ",")
}

// Reserved reads a reservation of upstream's configuration (kubeReserved,
// systemReserved): cpu, memory, ephemeral-storage and pid, each a quantity
// that is not negative. field names it in errors.
func Reserved(field string, m map[string]string) (v1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := v1.ResourceList{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch name := v1.ResourceName(k); name {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, "pid":
			q, err := resource.ParseQuantity(m[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", field, k, err)
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("%s: %s: %s is negative", field, k, m[k])
			}
			out[name] = q
		default:
			return nil, fmt.Errorf("%s: cannot reserve %q", field, k)
		}
	}
	return out, nil
}

// logs maps the containers' log rotation.
func (c *converter) logs() {
	kc, o := c.kc, &c.cfg.Agent
	size, err := resource.ParseQuantity(kc.ContainerLogMaxSize)
	if err != nil {
		c.invalid("containerLogMaxSize %q: %w", kc.ContainerLogMaxSize, err)
		return
	}
	o.Logs.MaxSize = size.Value()
	if o.Logs.MaxSize <= 0 {
		o.Logs.MaxSize = -1 // upstream's 0 is "never"; the agent's is its default
	}
	o.Logs.MaxFiles = int(deref(kc.ContainerLogMaxFiles))
}

// checkGates refuses the feature gates the node does not honour.
func (c *converter) checkGates() {
	for _, name := range slices.Sorted(maps.Keys(c.kc.FeatureGates)) {
		on := c.kc.FeatureGates[name]
		if refused, why := gateRefusal(name, on); refused {
			c.refuse("featureGates."+name, on, why)
		}
	}
}

// resourceManagers maps the CPU, memory and topology managers' fields; the
// policies and options themselves are checked by the agent's blocks
// (cpumanager, memorymanager, topologymanager), which refuse an unknown one
// by name.
func (c *converter) resourceManagers() {
	kc, r := c.kc, &c.cfg.Agent.Resources
	r.CPUManagerPolicy = kc.CPUManagerPolicy
	r.CPUManagerPolicyOptions = maps.Clone(kc.CPUManagerPolicyOptions)
	r.CPUManagerReconcilePeriod = kc.CPUManagerReconcilePeriod.Duration
	r.TopologyManagerPolicy = kc.TopologyManagerPolicy
	r.TopologyManagerScope = kc.TopologyManagerScope
	r.TopologyManagerPolicyOptions = maps.Clone(kc.TopologyManagerPolicyOptions)
	r.MemoryManagerPolicy = kc.MemoryManagerPolicy
	r.ReservedMemory = slices.Clone(kc.ReservedMemory)
	if kc.ReservedSystemCPUs != "" {
		set, err := cpuset.Parse(kc.ReservedSystemCPUs)
		if err != nil {
			c.invalid("unable to parse reservedSystemCPUs (--reserved-cpus) %q: %v", kc.ReservedSystemCPUs, err)
			return
		}
		r.ReservedSystemCPUs = set
	}
}
