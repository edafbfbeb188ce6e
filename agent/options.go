package agent

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/memorymanager"
	"github.com/kubeletkit/kubeletkit/server"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/watchdog"
)

// Options configure an Agent. The zero value runs the embedded fake runtime
// on the real clock with no pod source, under a root directory of its own
// that Run removes as it returns (see RootDir), standalone: statuses are kept in memory, the node's
// status is built but sent nowhere, events are logged.
//
// The fields every agent sets sit at the top; the rest are grouped by
// concern, each group's zero value being its documented default.
// Everything an API server provides comes in through Cluster; the module's
// examples/apiserver fills it with client-go (Joined.Apply).
type Options struct {
	// Clock is the time of the agent and of every block. Nil means the real
	// clock. With a fake clock, nothing the agent composes reads the real
	// time (agent/agenttest steps one).
	Clock Clock
	// Rand returns a pseudo-random number in [0, 1) for the jitter of pod
	// resyncs, retries and probes' first runs. Nil means math/rand/v2.
	Rand func() float64
	// Runtime is the container runtime: what it must implement, and the
	// optional capabilities the agent looks for, are Runtime's doc. Nil
	// means an embedded fake runtime (NewFakeRuntime) on Clock.
	Runtime Runtime
	// EventedPLEG follows the runtime's container events (CRI
	// GetContainerEvents) with a slow relist as a safety net, instead of
	// relisting every second: upstream's EventedPLEG feature. Pods turn
	// Running and Ready sooner; containerd 1.7+ and the fake support it.
	EventedPLEG bool
	// NodeName names the node; it suffixes static pods' names. Empty means
	// the host name, lower-cased.
	NodeName string
	// RootDir holds the pods' data directories (RootDir/pods/<uid>) and,
	// unless Logs.Dir says otherwise, their logs (RootDir/logs). It must
	// outlive the process as the runtime's containers do (upstream's is
	// /var/lib/kubelet), so it is required with a Runtime. With the
	// embedded fake runtime, whose containers end with the process, empty
	// means a fresh directory of this agent's own under os.TempDir(),
	// without mounts (Security.NoMounts), removed when Run returns.
	RootDir string
	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger
	// Out receives one line per change of a pod's phase or container
	// states; nil means none.
	Out io.Writer
	// Metrics receives the agent's measurements. Nil means none.
	Metrics Metrics

	// Cluster is what an API server provides: pods, the sinks of their
	// statuses and of the node's, mirror pods, events, volume sources,
	// services. The zero value is a standalone node.
	Cluster ClusterOptions
	// Sources are the static pod sources (a manifest directory, a URL, the
	// user's own named sources) and the object manifests static pods may
	// read.
	Sources SourceOptions
	// Node describes the node: its addresses, labels, declared features,
	// hardware, reservations and device plugins.
	Node NodeOptions
	// Cgroups puts the pods in upstream's cgroup hierarchy; the zero value
	// leaves cgroups to the runtime.
	Cgroups CgroupOptions
	// Resources configures the node's resource managers (the CPU manager
	// and the topology manager); the zero value is upstream's default,
	// both policies "none".
	Resources ResourceOptions
	// Security is what the node allows pods and how it guards them:
	// unsafe sysctls, the default seccomp profile, mounts.
	Security SecurityOptions
	// HTTP configures the node's HTTP servers: the read-only one and the
	// kubelet API, and what both serve beside the agent's own.
	HTTP HTTPOptions
	// Logs configures the containers' log files: where they go, links for
	// log collectors, rotation.
	Logs LogOptions
	// Eviction configures node-pressure eviction.
	Eviction EvictionOptions
	// ImageGC is the image garbage collection policy; the zero value is
	// upstream's (imagegc.DefaultPolicy: at 85% of the image filesystem
	// used, remove the least recently used images down to 80%; never an
	// image first seen less than 2m ago). Collection runs every
	// Timings.ImageGC on the image filesystem that Eviction.Stats (or the
	// machine) measures, and under disk pressure eviction removes every
	// unused image first.
	ImageGC imagegc.Policy
	// Shutdown is graceful node shutdown (upstream's shutdownGracePeriod
	// and shutdownGracePeriodCriticalPods): what a shutdown does, and what
	// triggers it besides Agent.Shutdown. The zero value leaves it off.
	Shutdown ShutdownOptions
	// Watchdog feeds systemd's service watchdog while /healthz's checks
	// pass (upstream's SystemdWatchdog). The zero value feeds none.
	Watchdog WatchdogOptions
	// Timings overrides default periods.
	Timings Timings
}

// WatchdogOptions configure the systemd watchdog (package watchdog): under
// a unit with WatchdogSec=, Run sends "WATCHDOG=1" every half Timeout,
// while the checks of /healthz (syncloop, pleg, HTTP.HealthChecks) pass.
type WatchdogOptions struct {
	// Timeout is the unit's watchdog timeout, as watchdog.Enabled reads it
	// from the environment; zero means no watchdog. One of a second or
	// less is refused (watchdog.ErrTimeoutTooSmall), as upstream.
	Timeout time.Duration
	// Notifier sends the notifications; nil means watchdog.Systemd
	// (NOTIFY_SOCKET).
	Notifier watchdog.Notifier
}

// ClusterOptions are the one seam an API server fills: each field is an
// interface (or a value) a client of the API server provides, and the zero
// value is a standalone node, as upstream's kubelet without an API server.
// examples/apiserver's Joined.Apply fills it with client-go; a test or an
// edge agent may fill any part of it.
type ClusterOptions struct {
	// Updates are pods from an API server (the source named "api"): SET,
	// ADD, UPDATE, DELETE, REMOVE and RECONCILE, merged with the static
	// pods. Nil means none. Pods of a source of the user's that is not an
	// API server go in Sources.Custom, each under its own name. Unlike
	// static pods, these pods can be evicted, as upstream protects static
	// pods from eviction. The agent reads it
	// until Run returns; closing it ends the source, not the agent.
	Updates <-chan syncloop.PodUpdate
	// StatusSink receives pod statuses (an API server's pods/status). Nil
	// keeps them in memory, a static pod standing for its own mirror pod.
	//
	// Without MirrorPods (a node no API server holds the pods of), the
	// sink needs no knowledge of the pods: it receives every pod's status,
	// from every source. The agent asks GetPod first; where the sink
	// answers ErrPodNotFound (status.ErrPodNotFound), the agent hands
	// UpdatePodStatus its own copy of the pod (the status it last wrote,
	// a static pod marked as its own mirror pod) and remembers what the
	// sink returns. Such a sink may hold nothing: GetPod always
	// ErrPodNotFound, UpdatePodStatus storing or sending the status and
	// returning nil, DeletePod nil. With MirrorPods the sink is the API
	// server's and upstream's rules hold: a pod it does not hold (deleted,
	// or a static pod whose mirror pod is not made yet) gets no status.
	StatusSink status.Sink
	// NodeStatusSink receives the node's status, and Leases its lease (an
	// API server's Node and Lease). Nil means none: the status is still
	// built, for NodeStatus and the pressure conditions.
	NodeStatusSink node.StatusSink
	// Leases renews the node's lease every quarter of LeaseDuration. Nil
	// means no lease.
	Leases node.LeaseSink
	// LeaseDuration is the node lease's duration, a whole number of
	// seconds; 0 means upstream's 40s.
	LeaseDuration time.Duration
	// Node gives the Node object pods are admitted to, the API server's:
	// its labels for nodeSelector and node affinity, its taints. Its
	// allocatable resources are always the agent's own. Nil, or an error
	// from it, means the agent's own Node: its name and labels
	// (Options.Node.Labels) and no taints. examples/apiserver's Join sets
	// it.
	Node admission.NodeGetter
	// ReportHostIPs puts the node's IPs (Options.Node.HostIPs) in pod
	// statuses (hostIP, hostIPs). Upstream kubelet does so when it has an
	// API server, and so a Node; standalone, pod statuses have no hostIP.
	ReportHostIPs bool
	// MirrorPods keeps the API server's mirror pods in step with the static
	// pods at every housekeeping. Nil means none.
	MirrorPods MirrorPods
	// Recorder receives every event the blocks record (client-go's
	// record.EventRecorder fits). Events are also logged. Nil means logged
	// only.
	Recorder EventRecorder
	// VolumeSources give configMaps, secrets and service account tokens to
	// the pods' volumes and environment, and the claims and persistent
	// volumes behind persistentVolumeClaim and ephemeral volumes (Claims;
	// also CSIDrivers when it is a volume.CSIDriverSource). Without
	// ConfigMaps, Secrets and Tokens: the objects of Sources.ObjectPath,
	// and no tokens; without Claims: a pod with a claim waits with
	// FailedMount.
	VolumeSources volume.Sources
	// Services lists the services whose variables containers get
	// (KUBERNETES_SERVICE_HOST ...). Nil means none.
	Services containerconfig.ServiceLister
	// RuntimeClasses looks up the pods' runtime classes (an API server's
	// RuntimeClass objects): the handler a pod's sandbox runs under, and
	// the overhead of a pod that has none in its spec
	// (containerconfig.Options.RuntimeClasses). Nil: a runtime class's
	// name is its handler, and only a pod's own overhead counts.
	RuntimeClasses containerconfig.RuntimeClasses
	// ResourceClaims reads the ResourceClaims of pods that have
	// spec.resourceClaims (an API server's, resource.k8s.io/v1), which
	// package dra checks and prepares before the pod's sandbox is created,
	// through the DRA drivers' kubelet plugins that register in
	// RootDir/plugins_registry. A pod whose claim was allocated a device
	// of a driver not registered waits in ContainerCreating with
	// upstream's FailedPrepareDynamicResources event ("... DRA driver NAME
	// is not registered") at each sync. Nil: no claim can be read, and
	// such a pod waits the same way ("... no source of ResourceClaims").
	ResourceClaims dra.Claims
	// ResourceSlices deletes the node's ResourceSlices on the API server,
	// as upstream's kubelet does (dra.Options.Slices;
	// examples/apiserver.ResourceSlices): all of them once, in the
	// background, as Run starts, and a DRA driver's once it has had no
	// connected kubelet plugin for dra.DefaultWipingDelay (30 seconds: its
	// plugin stopped, deregistered or never answered), so that no pod is
	// scheduled onto devices nobody serves. Nil: none are deleted.
	ResourceSlices dra.ResourceSlices
	// CSINodes records the CSI drivers that register through the plugin
	// registry on the API server's objects, as upstream's node info
	// manager does: the CSINode object and the Node's
	// csi.volume.kubernetes.io/nodeid annotation and topology labels
	// (examples/apiserver.CSINodes). A driver it cannot record is not
	// registered. Nil: drivers register on the node alone.
	CSINodes volume.CSINodeInstaller
}

// SourceOptions are the node's own pod sources, upstream's static pods, and
// the objects those pods may read. Each is off when empty.
type SourceOptions struct {
	// ManifestPath is a directory of static pod manifests (or one file);
	// empty means none. It is watched with inotify where the kernel allows
	// (a change is read within milliseconds), else polled every second,
	// and read in full every Timings.SourcePeriod.
	ManifestPath string
	// PollManifests polls ManifestPath every second instead of watching it:
	// for a fake clock, on which the kernel's notifications would arrive
	// outside the simulated time (agenttest sets it), and for file systems
	// whose changes inotify does not see.
	PollManifests bool
	// ManifestURL is an HTTP URL serving a pod or a pod list; empty means
	// none.
	ManifestURL string
	// Custom are the user's own pod sources, as many as wanted: an edge
	// agent's control plane, manifests in a format of its own, a test.
	// Each is a source of the merge under its own Name, as "file" and
	// "http" are (see PodSource). Empty means none.
	Custom []PodSource
	// ObjectPath is a directory of ConfigMap and Secret manifests (one
	// object per file, YAML or JSON) that pods' configMap, secret and
	// projected volumes and their environment read, re-read every
	// Timings.SourcePeriod; empty means none. Ignored when
	// Cluster.VolumeSources is set. With it, static pods may reference
	// configMaps and secrets (an extension: upstream's kubelet refuses such
	// manifests, and so does the agent without ObjectPath).
	ObjectPath string
}

// PodSource is a pod source of the user's (SourceOptions.Custom). Its
// messages are merged with those of the other sources by package
// syncloop/source, with the same rules: a SET is the source's complete
// list of pods, ADD, UPDATE, DELETE, REMOVE and RECONCILE change some of
// them; a pod must have a UID and a name, and its namespace and name must
// be free across every source. Its pods get the
// kubernetes.io/config.source annotation Name. Housekeeping (which removes
// what no source asks for) waits until every source, this one included,
// has sent a SET: a source with no pods sends an empty SET.
//
// Its pods are static pods, as upstream kubelet counts every pod that does
// not come from the API server (podspec.IsStatic): the node is their
// authority. They are critical (never evicted for node pressure, and
// admitted by preempting others when the node is full, as upstream),
// never resized in place, and one pod of a full name runs at a time; a
// failure to list Cluster.Services leaves them without service variables
// instead of failing their containers. Unlike the file and URL sources' pods, they keep
// their names and UIDs as sent (no node-name suffix, no UID made up); as
// an API server does with a pod it is given, the agent gives each the API
// server's defaults (namespace "default" when it has none) and validates
// it before the merge: an invalid pod is left out with a Warning
// FailedValidation event naming what is wrong. With Cluster.MirrorPods they get
// mirror pods in the API server and their statuses go to those; without,
// Cluster.StatusSink receives their statuses directly.
type PodSource struct {
	// Name is the source's name: not empty, unique among Custom, and
	// none of "file", "http", "api" (the agent's own sources) and "*"
	// (syncloop.SourceAll). New fails otherwise.
	Name string
	// Updates carries the source's messages; the Source field of a
	// message is ignored (every message is Name's). The agent reads it
	// until Run returns; closing it ends the source, not the agent (its
	// pods stay as last sent). Nil fails New.
	Updates <-chan syncloop.PodUpdate
}

// PulledImagesOptions configure the records of pulled images (package
// cri/pullrecords), kept under RootDir/image_manager as upstream's
// kubelet keeps them: a pod whose container's image is present, with pull
// policy IfNotPresent or Never, uses it only if the policy lets it or if
// credentials the pod has (a pull secret's, or its service account's
// through a credential provider plugin) pulled it, or if no credentials or
// the node's own did; otherwise the image is pulled with the pod's
// credentials (Never: the container fails with ErrImageNeverPull).
type PulledImagesOptions struct {
	// VerificationPolicy is upstream's
	// imagePullCredentialsVerificationPolicy: NeverVerify,
	// NeverVerifyPreloadedImages (images the node did not pull need no
	// credentials), NeverVerifyAllowlistedImages or AlwaysVerify. Empty
	// means NeverVerifyPreloadedImages, upstream's default; another value
	// fails New.
	VerificationPolicy pullrecords.Policy
	// Allowlist is upstream's preloadedImagesVerificationAllowlist: the
	// images any pod may use under NeverVerifyAllowlistedImages (image
	// names without tag or digest, or prefixes ending in "/*"); only with
	// that policy, else New fails, as upstream's validation.
	Allowlist []string
	// Off keeps no records, and lets any pod use any image present:
	// upstream with the KubeletEnsureSecretPulledImages feature gate off.
	Off bool
}

// NodeOptions describe the node the agent is: what it reports in its
// status and what it admits pods against.
type NodeOptions struct {
	// HostIPs are the node's IPs, primary first. Empty means the first
	// non-loopback address of the machine, or 127.0.0.1.
	HostIPs []string
	// Labels are labels of the node beside those it has of its own
	// (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and
	// their beta spellings), for the nodeSelector and node affinity of the
	// pods admitted when Cluster.Node is nil.
	Labels map[string]string
	// DeclaredFeatures are features the node declares in its status
	// (status.declaredFeatures, upstream's NodeDeclaredFeatures) beside
	// those the agent declares itself, exactly the ones its blocks
	// implement (node.DeclaredFeatures): ExtendWebSocketsToKubelet when
	// HTTP.API.WebSockets serves kubectl's WebSockets, and
	// InPlacePodVerticalScalingInitContainers (init containers are resized
	// in place). They are for what the caller implements outside
	// kubeletkit's blocks. The status lists them all sorted, once each. The
	// API server reads them: ExtendWebSocketsToKubelet makes it send
	// kubectl's WebSockets on to the node, which must then serve them, so
	// New refuses it here without HTTP.API.WebSockets. A name the API
	// server would refuse fails New too.
	DeclaredFeatures []string
	// Machine describes the node's hardware for its status. Nil means this
	// machine (node.LocalMachine, its ephemeral storage the filesystem of
	// RootDir).
	Machine node.Machine
	// KubeReserved and SystemReserved are resources kept for the node's
	// own daemons and the system (upstream's kubeReserved and
	// systemReserved: cpu, memory, ephemeral-storage, pid): they are taken
	// off the capacity, with the hard eviction thresholds of
	// memory.available and nodefs.available, to give the allocatable
	// resources the node reports and admits pods against. They are
	// enforced on cgroups only with Cgroups.EnforceNodeAllocatable "pods".
	// A negative quantity fails New.
	KubeReserved, SystemReserved v1.ResourceList
	// MaxPods is the node's pods capacity (upstream's maxPods,
	// --max-pods): the pods it reports and admits at most. Zero means
	// 110, upstream's default; it replaces what Machine reports. A
	// negative number fails New.
	MaxPods int64
	// MaxParallelImagePulls bounds the image pulls that run at once, as
	// upstream's serializeImagePulls and maxParallelImagePulls: zero pulls
	// one image at a time (upstream's default, serializeImagePulls: true),
	// n > 0 at most n at once, a negative number without a bound
	// (serializeImagePulls: false and no maxParallelImagePulls). A pod
	// waiting for its turn gives its start slot back (podworkers'
	// StartGate), as it does while the pull runs.
	MaxParallelImagePulls int32
	// MaxContainerRestartPeriod is the longest a crashing container waits
	// before it is restarted (CrashLoopBackOff), upstream's
	// crashLoopBackOff.maxContainerRestartPeriod (KubeletCrashLoopBackOffMax,
	// beta and on by default since 1.35): the back-off doubles from 10s,
	// or from this period when it is shorter, up to it. Image pulls keep
	// their back-off, and a crash loop starts over only after 10 minutes
	// without a crash, as upstream. Zero: 5 minutes, upstream's default.
	// Upstream's range, 1s to 300s, is enforced: anything else fails New.
	MaxContainerRestartPeriod time.Duration
	// ImageCredentials are the node's own registry credentials, tried
	// after those of a pod's imagePullSecrets (upstream's image credential
	// provider plugins: cri/credentialprovider.Providers, from
	// --image-credential-provider-config). Nil: none.
	ImageCredentials podsync.Credentials
	// PulledImages are the records of which credentials pulled which
	// image, and when a pod must show its own for an image already on the
	// node (upstream's KubeletEnsureSecretPulledImages, on by default
	// since 1.35). The zero value is upstream's default.
	PulledImages PulledImagesOptions
	// ClusterDNS are the addresses of the cluster's DNS servers
	// (upstream's clusterDNS, --cluster-dns), each an IP address: the only
	// nameservers of ClusterFirst pods. Empty: none, and ClusterFirst
	// pods get what Default gives, with upstream's MissingClusterDNS
	// events.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (upstream's clusterDomain,
	// most often cluster.local): ClusterFirst pods search
	// <namespace>.svc.<domain>, svc.<domain> and <domain> before the
	// host's search paths, and a pod with a subdomain has the FQDN
	// <hostname>.<subdomain>.<namespace>.svc.<domain> (its hosts file,
	// setHostnameAsFQDN). Empty: no cluster search paths. No white space.
	ClusterDomain string
	// ResolvConf is the host's resolver configuration (upstream's
	// --resolv-conf, whose default is /etc/resolv.conf, dns.DefaultResolvConf
	// of package cri/podsync/containerconfig/dns): the nameservers, search
	// paths and options of Default pods, the search paths ClusterFirst pods
	// get after the cluster's. It is read for each sandbox (one that cannot
	// be read fails the sandbox) and checked as Run starts, with upstream's
	// CheckLimitsForResolvConf warning on the node when it cannot be read
	// or its search line is beyond what pods can get. Empty means
	// /etc/resolv.conf, upstream's default. ResolvConfNone means none, as
	// upstream's --resolv-conf="": Default pods get nameserver 127.0.0.1
	// (::1 on an IPv6 node) and search ".", not the runtime's copy of its
	// host's file.
	ResolvConf string
	// DevicePluginDir is the device plugin directory (package devices):
	// the agent serves the registration socket there (kubelet.sock),
	// reports the plugins' resources in the node's capacity and
	// allocatable, gives containers their devices at admission and keeps
	// the allocations in a checkpoint there. Upstream's is
	// /var/lib/kubelet/device-plugins, where plugins look for it. Empty
	// means no device plugins.
	DevicePluginDir string
	// DRADialer connects to the kubelet plugins of DRA drivers that
	// register through the plugin registry (dra.Options.Dialer): the node
	// keeps a connection to each and reads its devices' health stream.
	// Nil: an endpoint is a unix socket's path, dialed (dra.DialUnix). A
	// test inside a testing/synctest bubble (agenttest), where a goroutine
	// reading a socket is never durably blocked, gives in-memory plugins'
	// (dratest.Dialer).
	DRADialer dra.Dialer
}

// ResourceOptions configure the node's resource managers as the
// KubeletConfiguration fields of the same names (docs/resources.md).
type ResourceOptions struct {
	// CPUManagerPolicy is "none" (the default, "") or "static" (package
	// cpumanager): the containers of Guaranteed pods that request whole
	// CPUs get them exclusively, written into their CRI config (cpuset,
	// no CFS quota) and kept in RootDir/cpu_manager_state. The static
	// policy reserves ReservedSystemCPUs, or as many CPUs as
	// Node.KubeReserved and Node.SystemReserved reserve (at least one).
	CPUManagerPolicy string
	// CPUManagerPolicyOptions are the static policy's options
	// (cpumanager.OptionFullPCPUsOnly, cpumanager.OptionStrictCPUReservation);
	// any other is refused by name.
	CPUManagerPolicyOptions map[string]string
	// CPUManagerReconcilePeriod is how often running containers' cpusets
	// are brought in line with the CPU manager's state; 0 means 10s.
	CPUManagerReconcilePeriod time.Duration
	// ReservedSystemCPUs are the CPUs kept for the system and the kubelet
	// (--reserved-cpus), never given exclusively. The node's allocatable
	// leaves out what Node.SystemReserved and Node.KubeReserved say:
	// kubeletconfig sets SystemReserved's cpu to their count, as upstream;
	// a caller setting this field alone does the same.
	ReservedSystemCPUs cpuset.CPUSet
	// TopologyManagerPolicy is "none" (the default, ""), "best-effort",
	// "restricted" or "single-numa-node" (package topologymanager): the
	// NUMA alignment of the CPU manager's CPUs, refusing pods
	// (TopologyAffinityError) where the policy requires an alignment that
	// cannot be had.
	TopologyManagerPolicy string
	// TopologyManagerScope is "container" (the default, "") or "pod".
	TopologyManagerScope string
	// TopologyManagerPolicyOptions are the topology manager's options
	// (topologymanager.OptionMaxAllowableNUMANodes,
	// topologymanager.OptionPreferClosestNUMANodes).
	TopologyManagerPolicyOptions map[string]string
	// Topology is the machine's CPUs; nil means read from /sys when a
	// policy other than "none" needs it (cpumanager.Discover). A test
	// gives a fake machine (cpumanager.NewTopology).
	Topology *cpumanager.Topology
	// MemoryManagerPolicy is "None" (the default, "") or "Static" (package
	// memorymanager): the memory and huge pages of Guaranteed pods'
	// containers are pinned to NUMA nodes (their cpuset_mems), aligned by
	// the topology manager, kept in RootDir/memory_manager_state.
	MemoryManagerPolicy string
	// ReservedMemory is reservedMemory (--reserved-memory): the memory kept
	// on each NUMA node for the system; under "Static" its sum by resource
	// must equal Node.KubeReserved + Node.SystemReserved (+ the hard
	// memory.available eviction threshold, for memory).
	ReservedMemory []kubeletv1beta1.MemoryReservation
	// MemoryMachine is the machine's NUMA memory; nil means read from
	// /sys under "Static" (memorymanager.Discover).
	MemoryMachine *memorymanager.Machine
	// NUMADistances are the distances between NUMA nodes that the
	// topology manager's prefer-closest-numa-nodes option weighs; nil means
	// read from /sys with a discovered Topology (topologymanager.ReadDistances).
	NUMADistances map[int][]int
	// KeepCPUQuotaWithExclusiveCPUs is upstream's
	// DisableCPUQuotaWithExclusiveCPUs gate turned off: a container given
	// exclusive CPUs by the static CPU manager keeps its CFS quota, and so
	// does its pod cgroup. By default (the gate on, upstream's default)
	// they run without one.
	KeepCPUQuotaWithExclusiveCPUs bool
	// DisablePodLevelResources is upstream's PodLevelResources gate turned
	// off: a pod that sets spec.resources is refused at admission
	// (admission.ReasonPodLevelResourcesNotSupported, "PodLevelResources
	// feature gate is disabled"), as upstream's kubelet refuses it.
	DisablePodLevelResources bool
	// DisablePodLevelResize is upstream's
	// InPlacePodLevelResourcesVerticalScaling gate turned off: a resize
	// that changes a pod's spec.resources is Infeasible
	// (allocation.MessagePodLevelResizeDisabled).
	DisablePodLevelResize bool
}

// CgroupOptions put the pods in upstream's cgroup hierarchy (package
// cgroups). The zero value leaves it off: the runtime places the pods.
type CgroupOptions struct {
	// PerQOS puts the pods in upstream's cgroup hierarchy (upstream's
	// cgroupsPerQOS): kubepods, limited to the node's capacity (less
	// Node.KubeReserved and Node.SystemReserved with
	// EnforceNodeAllocatable "pods"), kubepods/burstable and
	// kubepods/besteffort, and a cgroup per pod with its CPU shares, quota
	// and memory limit, created before its sandbox (its cgroup parent) and
	// removed once its containers are gone. Only the pod cgroups this agent
	// made (recorded under RootDir/cgroups) are ever removed; another
	// agent's on the same host are left alone. Off by default here
	// (upstream's default is on); it needs root.
	PerQOS bool
	// Driver is upstream's cgroupDriver: "" or "cgroupfs", or "systemd":
	// the hierarchy as systemd slices (kubepods.slice,
	// kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice) created
	// over systemd's D-Bus API, as upstream's (package cgroups); Run
	// connects to the machine's systemd. It is only the fallback: as
	// upstream's kubelet since KubeletCgroupDriverFromCRI, Run asks the
	// runtime for its driver (the CRI RuntimeConfig, three tries two
	// seconds apart; Run fails when it cannot answer) and uses that one,
	// so that the sandboxes' cgroup parent is spelled as the runtime
	// expects. Driver is used when the runtime does not implement
	// RuntimeConfig (containerd 1.6, a Runtime without
	// cri.StatusReporter) or reports no Linux configuration. Without
	// PerQOS the runtime is not asked: the driver names nothing.
	Driver string
	// Root is the cgroup the hierarchy goes under (upstream's cgroupRoot);
	// empty means "/". Agents that share a host should each have their
	// own.
	Root string
	// FS is where the cgroup file system is mounted; empty means
	// /sys/fs/cgroup.
	FS string
	// EnforceNodeAllocatable is upstream's enforceNodeAllocatable: "pods"
	// limits kubepods to the node's allocatable (capacity less
	// Node.KubeReserved and Node.SystemReserved) instead of its capacity,
	// and needs PerQOS; "none" or empty enforces nothing.
	// "system-reserved" and "kube-reserved" (and their "-compressible"
	// forms) are refused: they need cgroups of the reserved daemons the
	// agent does not manage.
	EnforceNodeAllocatable []string
	// PodPidsLimit is upstream's podPidsLimit (minikubelet's
	// --pod-max-pids): a positive value is written as the pids limit
	// (pids.max, systemd's TasksMax) of every pod cgroup when it is
	// created, so that no pod's processes and threads exceed it. 0 or a
	// negative value (upstream's default -1, which its configuration
	// defaults make of any negative one) sets none: a pod is bounded only
	// by kubepods (the node's task limit, less the "pid" of
	// Node.KubeReserved and Node.SystemReserved with
	// EnforceNodeAllocatable "pods"). A pod cgroup made earlier (before a
	// restart) keeps the limit it was made with, as upstream's. Without
	// PerQOS there are no pod cgroups and it does nothing, as upstream's.
	PodPidsLimit int64
	// CPUCFSQuotaPeriod is upstream's cpuCFSQuotaPeriod
	// (CustomCPUCFSQuotaPeriod, GA and on in 1.36): the CFS period of
	// every container that limits CPU (its CRI CpuPeriod, its CpuQuota the
	// limit's share of it, never below 1ms) and, with PerQOS, of the pod
	// cgroups. Zero means upstream's default, 100ms; otherwise between
	// 1ms and 1s. It applies with PerQOS off too: the containers' quotas
	// are the runtime's to write, from their configs.
	CPUCFSQuotaPeriod time.Duration
}

// SecurityOptions say what the node allows pods beyond upstream's defaults
// and how it guards their data. The zero value is upstream's default.
type SecurityOptions struct {
	// AllowedUnsafeSysctls are the sysctls beyond the safe set a pod may
	// set, by name or by prefix ending in "*" (upstream's
	// allowedUnsafeSysctls); each must belong to a group the kernel
	// namespaces (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*,
	// net.*). A pod setting any other sysctl is refused (SysctlForbidden).
	AllowedUnsafeSysctls []string
	// SeccompDefault runs the containers of pods that name no seccomp
	// profile under the runtime's default profile (RuntimeDefault) instead
	// of Unconfined: upstream's seccompDefault, off by default as there.
	// Localhost profiles are files under RootDir/seccomp, upstream's
	// <root-dir>/seccomp.
	SeccompDefault bool
	// NoMounts keeps the agent from mounting: secret and projected volumes
	// are written on disk under RootDir instead of a tmpfs, and subPaths are
	// handed to the runtime unpinned. It is always so when the process is
	// not root.
	NoMounts bool
}

// HTTPOptions configure the node's servers: the read-only server, the
// kubelet API and the healthz port (package server), the pod-resources
// socket (package podresources), and the handlers and health checks the
// first two serve beside the agent's own. The zero value serves nothing.
type HTTPOptions struct {
	// Listen is the address of the read-only HTTP server (upstream's
	// read-only port, package server without authentication: /healthz,
	// /pods, /node, /stats/summary, /metrics); empty means none. ":0"
	// picks a free port; Addr tells which.
	Listen string
	// Healthz serves upstream's healthz port (healthzBindAddress and
	// healthzPort) beside them; nil means none.
	Healthz *HealthzOptions
	// API serves the kubelet API: kubectl logs, exec, attach,
	// port-forward and cp, the stats summary (kubectl top through
	// metrics-server), over TLS with authentication and authorization.
	// Nil means none.
	API *APIOptions
	// PodResources serves the pod-resources gRPC API (package
	// podresources: List, Get, GetAllocatableResources, and v1alpha1's
	// List) on RootDir/pod-resources/kubelet.sock, where monitoring agents
	// and device plugins dial upstream's (/var/lib/kubelet/pod-resources/
	// kubelet.sock); upstream always serves it. Off, Agent.PodResources
	// still answers in process.
	PodResources bool
	// PodResourcesListAllPods is upstream's
	// KubeletPodResourcesListUseActivePods gate turned off: the v1 List
	// answers every pod the node holds, finished ones too, as before that
	// gate (v1alpha1's List always does). By default it answers the active
	// pods.
	PodResourcesListAllPods bool
	// MetricsHandler serves /metrics on both servers (examples/prometheus
	// has one over Options.Metrics); nil means no /metrics.
	MetricsHandler http.Handler
	// ResourceMetricsHandler serves /metrics/resource on both servers
	// (examples/prometheus has one over the agent's Summary); nil means
	// no such endpoint.
	ResourceMetricsHandler http.Handler
	// ProbeMetricsHandler serves /metrics/probes on both servers, the
	// probe metrics upstream serves apart from /metrics
	// (examples/prometheus has one over the Metrics' probe hooks, see
	// ProbeMetrics); nil means no such endpoint.
	ProbeMetricsHandler http.Handler
	// CadvisorMetricsHandler serves /metrics/cadvisor on both servers,
	// upstream's cAdvisor metrics (examples/prometheus has one over
	// Agent.Usage and Agent.Machine); nil means no such endpoint.
	CadvisorMetricsHandler http.Handler
	// HealthChecks are /healthz's checks after the agent's own (ping,
	// syncloop, pleg) on both servers; examples/apiserver's Joined adds
	// "apisource", which says when the pods come from the local state.
	HealthChecks []server.HealthCheck
}

// HealthzOptions configure the node's healthz server (package server's
// Healthz), which kubeadm join's kubelet-check, systemd and monitoring
// poll: /healthz over plain HTTP without authentication, and nothing else.
// As upstream's, it runs only "ping", and answers "ok" once the agent has
// started; a port in use is logged and tried again every 5s on the
// agent's clock, and never fails the agent.
type HealthzOptions struct {
	// Listen is its address, host:port (upstream's is 127.0.0.1:10248);
	// New refuses one that is not. ":0" picks a free port; HealthzAddr
	// tells which.
	Listen string
}

// LogOptions configure the containers' log files (package cri/logs). The
// zero value is upstream's default under RootDir.
type LogOptions struct {
	// Dir is the directory of the containers' log files
	// (<namespace>_<name>_<uid>/<container>/<restart>.log), upstream's
	// podLogsDir, which is /var/log/pods there. Empty means RootDir/logs.
	Dir string
	// LinksDir gets a symbolic link to each container's log file,
	// <pod>_<namespace>_<container>-<id>.log, as upstream keeps
	// /var/log/containers for log collectors (podsync.Options). Empty: no
	// links.
	LinksDir string
	// MaxSize is the size at which a running container's log is rotated
	// (upstream's containerLogMaxSize); 0 means 10Mi, negative turns
	// rotation off.
	MaxSize int64
	// MaxFiles is how many files a container's log may have, the live one
	// included (upstream's containerLogMaxFiles); 0 means 5.
	MaxFiles int
}
