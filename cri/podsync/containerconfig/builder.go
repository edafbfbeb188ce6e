package containerconfig

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrInvalidOptions is wrapped by New's error for an option it cannot use.
var ErrInvalidOptions = errors.New("invalid options")

// DefaultLogRoot is where pod log directories live by default.
const DefaultLogRoot = "/var/log/pods"

// VolumeHostPaths gives the host directory of each of a pod's volumes,
// volume name → host path; nil means the pod has none mounted.
type VolumeHostPaths interface {
	VolumeHostPaths(pod *v1.Pod) (map[string]string, error)
}

// VolumeHostPathsFunc adapts a function to VolumeHostPaths.
type VolumeHostPathsFunc func(pod *v1.Pod) (map[string]string, error)

// VolumeHostPaths calls f.
func (f VolumeHostPathsFunc) VolumeHostPaths(pod *v1.Pod) (map[string]string, error) { return f(pod) }

var _ VolumeHostPaths = VolumeHostPathsFunc(nil)

// ContainerMounts is an optional interface of Options.Volumes: a volume
// manager that builds a container's CRI mounts itself (subPaths resolved
// against symlinks, read-only volumes, propagation), as volume.Manager
// does. When Volumes has it, the Builder uses it instead of joining host
// paths and subPaths itself. An error with a StatusMessage() string method
// (volume.SubPathError) gives the message of the container's
// CreateContainerConfigError; ContainerConfig returns the whole error.
type ContainerMounts interface {
	Mounts(pod *v1.Pod, container *v1.Container) ([]*runtimeapi.Mount, error)
}

// ContainerDevices adds to a container's CRI config what the devices
// allocated to it need: environment variables, mounts, device nodes, CDI
// devices, annotations (devices.Manager does, from the device plugins'
// answers). It is called last, for each container config built; its error
// is ContainerConfig's.
type ContainerDevices interface {
	ApplyDevices(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error
}

// ClaimDevices gives the CDI devices (vendor.com/class=name) prepared for
// the resource claims a container uses (Dynamic Resource Allocation), as
// dra.Manager does. Its error is ContainerConfig's.
type ClaimDevices interface {
	CDIDevices(pod *v1.Pod, c *v1.Container) ([]string, error)
}

// ContainerCPUs gives the CPUs a container may run on, in Linux list
// syntax ("2-3,6"; empty: every CPU), and whether they are its own, as a
// CPU manager decides them (cpumanager.Manager does).
type ContainerCPUs interface {
	ContainerCPUSet(pod *v1.Pod, c *v1.Container) (cpus string, exclusive bool)
}

// ContainerMemoryNodes gives the NUMA nodes a container's memory is pinned
// to, in Linux list syntax ("0", "0-1"; empty: no pinning), as
// memorymanager.Manager does.
type ContainerMemoryNodes interface {
	ContainerMemoryNodes(pod *v1.Pod, c *v1.Container) string
}

// ConfigMapGetter gives the configMaps that containers' environments
// reference (envFrom, configMapKeyRef). A missing one is an error for which
// apimachinery's errors.IsNotFound holds. volume.StaticSources and the
// examples' API-server adapters satisfy it.
type ConfigMapGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
}

// SecretGetter gives the secrets that containers' environments reference
// (envFrom, secretKeyRef); a missing one is a NotFound error.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// EventRecorder receives the Builder's events; client-go's
// record.EventRecorder satisfies it.
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// ImageStatuser reports an image as the runtime holds it, as CRI's
// ImageStatus does (cri.ImageManager: the client of cri.Dial and
// *fake.Runtime have it): a response with a nil Image when the image is not
// present.
type ImageStatuser interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
}

// ImageStatusFunc adapts a function to ImageStatuser.
type ImageStatusFunc func(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)

// ImageStatus calls f.
func (f ImageStatusFunc) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return f(ctx, image, verbose)
}

var _ ImageStatuser = ImageStatusFunc(nil)

// Options configures a Builder. Every field is optional: the zero value of
// each is the documented default, which for a source of something (volumes,
// configMaps, services, ...) means the node has none.
type Options struct {
	// Images tells the user an image runs as, for the runAsNonRoot check
	// of a container that sets no runAsUser. Nil: such a container is
	// refused, since nothing can say its image does not run as root.
	Images ImageStatuser
	// Volumes gives the host paths of pod volumes (nil: no pod has volumes;
	// a volumeMount then fails). When it also implements ContainerMounts,
	// the container's mounts are its.
	Volumes VolumeHostPaths
	// ConfigMaps and Secrets resolve environment references to them (nil:
	// a container referencing one fails, as upstream's kubelet without an
	// API client does). Values are never logged.
	ConfigMaps ConfigMapGetter
	Secrets    SecretGetter
	// Services gives the services whose variables containers get
	// (ServiceEnv); nil means none, as for upstream's kubelet without an
	// API server.
	Services ServiceLister
	// Devices adds the devices allocated to a container to its config
	// (nil: none).
	Devices ContainerDevices
	// ClaimDevices gives the CDI devices of the resource claims each
	// container uses, added to its config's CDIDevices after those of
	// Devices, as upstream's kubelet adds the DRA manager's after the
	// device manager's (nil: none).
	ClaimDevices ClaimDevices
	// CPUs gives the CPUs each container may run on (its cpuset_cpus) and
	// whether they are its own; a container with CPUs of its own runs
	// without a CFS quota (-1), as upstream's DisableCPUQuotaWithExclusiveCPUs
	// (on by default) runs it. nil: no cpuset, the runtime's default.
	CPUs ContainerCPUs
	// MemoryNodes gives the NUMA nodes each container's memory is pinned
	// to (its cpuset_mems), as a memory manager's Static policy decides
	// them. nil: none, the runtime's default.
	MemoryNodes ContainerMemoryNodes
	// LogRoot is the root of pod log directories (empty: DefaultLogRoot).
	// Like PodsDir and SeccompProfileRoot, it is handed to the runtime,
	// which reads a relative path from its own working directory: give
	// absolute paths.
	LogRoot string
	// PodsDir is the kubelet's pods directory (upstream's
	// /var/lib/kubelet/pods). When set, each container whose spec has a
	// terminationMessagePath gets an empty file
	// PodsDir/<uid>/containers/<name>/<restartCount> mounted there, each
	// container of a pod with an IP (or on the host's network) gets the
	// pod's hosts file, PodsDir/<uid>/etc-hosts, at /etc/hosts, as
	// upstream does, and the ranges of pods' user namespaces are recorded
	// in PodsDir/<uid>/userns. Empty: neither mount, and user namespace
	// ranges kept in memory only.
	PodsDir string
	// NodeHostsFile is the node's hosts file, which a host-network pod's
	// hosts file copies (empty: /etc/hosts).
	NodeHostsFile string
	// RuntimeHandler is the handler of a pod that names no runtime class
	// ("" is the runtime's default).
	RuntimeHandler string
	// RuntimeClasses looks up the pods' runtime classes: a pod's sandbox
	// runs under its class's handler (RuntimeHandler), and a class that
	// does not exist is an error, as upstream's. Nil: the class's name is
	// the handler.
	RuntimeClasses RuntimeClasses
	// NodeName and HostIPs feed spec.nodeName (when the pod has none) and
	// status.hostIP(s) of the downward API; HostIPs are also a host-network
	// pod's status.podIP(s) until the runtime reports its own. Each of
	// HostIPs is an IP address.
	NodeName string
	HostIPs  []string
	// RecursiveReadOnlyMounts tells whether the runtime handler (the pod's
	// runtime class, else RuntimeHandler) makes read-only mounts read-only
	// recursively; nil means no. A volumeMount asking for recursiveReadOnly
	// Enabled where it cannot is an error, IfPossible then means plain
	// read-only, as upstream.
	RecursiveReadOnlyMounts func(handler string) bool
	// NodeAllocatable is what a container's unset limits.cpu, limits.memory
	// and limits.ephemeral-storage read as in the downward API (upstream's
	// default: the node's allocatable). Nil: such a reference is an error.
	NodeAllocatable v1.ResourceList
	// ClusterDNS are the addresses of the cluster's DNS servers
	// (upstream's clusterDNS): a ClusterFirst pod's only nameservers. Each
	// is an IP address. Empty: the node has none, and ClusterFirst pods
	// get what Default gives, with upstream's MissingClusterDNS events.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (upstream's
	// clusterDomain, most often cluster.local): the search paths
	// <namespace>.svc.<domain>, svc.<domain> and <domain> of ClusterFirst
	// pods, and the domain of a pod's FQDN in its hostname and hosts file,
	// <hostname>.<subdomain>.<namespace>.svc.<domain>. Empty: no cluster
	// search paths, and that FQDN ends in "svc.", as upstream's. It holds
	// no white space.
	ClusterDomain string
	// ResolvConf is the host's resolver configuration (upstream's
	// --resolv-conf, whose default is dns.DefaultResolvConf), read for
	// each sandbox config: the nameservers, search paths and options of
	// Default pods, and the search paths ClusterFirst pods get after the
	// cluster's. A file that cannot be read or parsed fails the sandbox
	// config, as upstream's. Empty: none, as upstream's --resolv-conf="":
	// a Default pod gets the loopback address (127.0.0.1, ::1 on an IPv6
	// HostIPs) and search ".". Package dns holds the rules.
	ResolvConf string
	// Recorder receives the events of DNS configuration (package dns:
	// DNSConfigForming and MissingClusterDNS on the pod, MissingClusterDNS
	// on the Node named NodeName). Nil: none.
	Recorder EventRecorder
	// SeccompProfileRoot is the directory a Localhost seccomp profile's
	// name is resolved in (upstream's <root-dir>/seccomp); a name that is
	// absolute or climbs out with ".." is refused. Empty:
	// DefaultSeccompProfileRoot.
	SeccompProfileRoot string
	// SeccompDefault runs containers whose pod and container name no
	// seccomp profile under the runtime's default profile (RuntimeDefault)
	// instead of Unconfined: upstream's seccompDefault, off by default.
	SeccompDefault bool
	// UserNamespaces tells whether a runtime handler (the pod's runtime
	// class, else RuntimeHandler) supports user namespaces, as the
	// runtime's status reports it (handler features). A pod with
	// hostUsers: false gets a user namespace of its own, with 65536 host
	// IDs kept for it alone, only where it is supported; elsewhere its
	// sandbox config is refused with upstream's message. Nil: no handler
	// supports them.
	UserNamespaces func(handler string) bool
	// Cgroups gives each sandbox its cgroup parent, the pod's cgroup
	// (package cgroups). Nil: none, the runtime's default.
	Cgroups SandboxCgroups
	// MemorySwapController says the node's cgroups account swap (cgroup
	// v1's memory.memsw, v2's memory.swap.max): each container's swap
	// limit is then its memory limit, so that it never swaps, as
	// upstream's default NoSwap does (and cgroup v1 refuses a memory limit
	// above the swap limit).
	MemorySwapController bool
	// SELinuxEnabled says the host runs SELinux
	// (hoststats.SELinuxEnabled): a container's termination-message file
	// is then mounted with selinux_relabel, as upstream mounts it only
	// then. Volumes are relabelled as their plugin says (volume.Mounted),
	// and /etc/hosts always, whatever this says.
	SELinuxEnabled bool
	// MemoryCapacity is the node's memory in bytes, against which a
	// Burstable container's oom_score_adj is computed (OOMScoreAdj). Zero
	// gives every Burstable container 999. Not negative.
	MemoryCapacity int64
	// CPUCFSQuotaPeriod is the CFS period of the containers that limit
	// CPU (upstream's cpuCFSQuotaPeriod, CustomCPUCFSQuotaPeriod being GA
	// and on in 1.36): their CpuPeriod, and their CpuQuota is the limit's
	// share of it. Zero means DefaultCPUCFSQuotaPeriod, 100ms; otherwise
	// between 1ms and 1s, in whole microseconds as the kernel counts.
	CPUCFSQuotaPeriod time.Duration
	// HugePageSizes are the page sizes the node's kernel offers, as the
	// CRI spells them ("2MB", "1GB"; HugePageSizes reads them from the
	// node's capacity): each container gets a huge page limit for every
	// one of them (HugepageLimits), 0 where neither it nor its pod has a
	// limit of that size, as upstream's. Empty: no huge page limits sent,
	// the runtime's default.
	HugePageSizes []string
}

// Builder builds the CRI configs of pods' sandboxes and containers. Its
// methods are safe for concurrent use; calls for one pod are to be
// serialized, as the files ContainerConfig writes under PodsDir are the
// pod's. The host ID ranges of user namespaces it hands out are kept in it
// (and recorded under PodsDir): a node has one Builder.
type Builder struct {
	opts   Options
	userns userNamespaces
}

// New returns a Builder. It fails, wrapping ErrInvalidOptions, for a host
// or DNS address that is not an IP address, a ClusterDomain with white
// space, a negative MemoryCapacity, or a CPUCFSQuotaPeriod outside 1ms to
// 1s.
// It starts nothing and touches no disk.
func New(opts Options) (*Builder, error) {
	if opts.LogRoot == "" {
		opts.LogRoot = DefaultLogRoot
	}
	if opts.SeccompProfileRoot == "" {
		opts.SeccompProfileRoot = DefaultSeccompProfileRoot
	}
	for _, a := range []struct {
		name  string
		addrs []string
	}{{"HostIPs", opts.HostIPs}, {"ClusterDNS", opts.ClusterDNS}} {
		for _, s := range a.addrs {
			if _, err := netip.ParseAddr(s); err != nil {
				return nil, fmt.Errorf("containerconfig: %s: %q is not an IP address: %w", a.name, s, ErrInvalidOptions)
			}
		}
	}
	if strings.ContainsFunc(opts.ClusterDomain, unicode.IsSpace) {
		return nil, fmt.Errorf("containerconfig: ClusterDomain %q holds white space: %w", opts.ClusterDomain, ErrInvalidOptions)
	}
	if opts.MemoryCapacity < 0 {
		return nil, fmt.Errorf("containerconfig: MemoryCapacity %d is negative: %w", opts.MemoryCapacity, ErrInvalidOptions)
	}
	if opts.CPUCFSQuotaPeriod == 0 {
		opts.CPUCFSQuotaPeriod = DefaultCPUCFSQuotaPeriod
	}
	if opts.CPUCFSQuotaPeriod < time.Millisecond || opts.CPUCFSQuotaPeriod > time.Second {
		return nil, fmt.Errorf("containerconfig: CPUCFSQuotaPeriod %v is not between 1ms and 1s: %w", opts.CPUCFSQuotaPeriod, ErrInvalidOptions)
	}
	return &Builder{opts: opts}, nil
}

// RemovePod forgets what the Builder keeps about a pod: the host IDs of its
// user namespace, freed for another pod, and their record under PodsDir.
func (b *Builder) RemovePod(uid types.UID) {
	b.userns.release(b.opts.PodsDir, uid)
}

// LogDirectory returns the pod's log directory under root:
// root/<namespace>_<name>_<uid>.
func LogDirectory(root string, pod *v1.Pod) string {
	return filepath.Join(root, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// statusError is an error whose words for the container's status (the
// message of its CreateContainerConfigError) are not its whole text:
// upstream's message, where the error says more for logs.
type statusError struct {
	msg string
	err error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// StatusMessage is the message for the container's status.
func (e *statusError) StatusMessage() string { return e.msg }

// podDesc formats a pod as upstream does in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
