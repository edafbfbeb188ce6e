package containerconfig

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig/dns"
	"github.com/kubeletkit/kubeletkit/internal/expansion"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's CPU constants for translating requests and limits.
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	minQuotaValue = 1000 // µs
)

// DefaultCPUCFSQuotaPeriod is upstream's default cpuCFSQuotaPeriod, the
// CFS period of containers that limit CPU.
const DefaultCPUCFSQuotaPeriod = 100 * time.Millisecond

// MemoryRequestAnnotation holds, on a container whose resizePolicy asks
// for a restart for memory, the memory request (bytes) it was created
// with: a resize that changes only the request restarts it too, as
// upstream's, and the runtime reports no memory request to compare with.
const MemoryRequestAnnotation = "kubeletkit.io/memory-request"

// SandboxConfig builds the CRI sandbox config of a pod: metadata with the
// attempt, hostname, log directory, DNS, port mappings, host namespaces,
// the identity labels plus the pod's labels, and the pod's annotations.
func (b *Builder) SandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	labels := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	for k, v := range cri.PodLabels(pod.UID, pod.Name, pod.Namespace) {
		labels[k] = v
	}
	annotations := make(map[string]string, len(pod.Annotations))
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	// A pod on the host's network shares the node's UTS namespace: the
	// runtime must not set a hostname, and the pod's fields are not read
	// (hostnameOverride may not be set with hostNetwork).
	var hostname string
	if !pod.Spec.HostNetwork {
		var domain string
		var err error
		if hostname, domain, err = podHostnameAndDomain(pod, b.opts.ClusterDomain); err != nil {
			return nil, err
		}
		// With hostnameOverride there is no domain, so setHostnameAsFQDN
		// (which may not be set with it) changes nothing.
		if domain != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
			// The kernel's nodename holds 64 characters.
			fqdn := hostname + "." + domain
			if len(fqdn) > 64 {
				return nil, fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
			}
			hostname = fqdn
		}
	}
	sc, err := b.sandboxSecurityContext(pod)
	if err != nil {
		return nil, err
	}
	dnsConfig, err := b.dnsConfig(pod)
	if err != nil {
		return nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Hostname:     hostname,
		LogDirectory: LogDirectory(b.opts.LogRoot, pod),
		DnsConfig:    dnsConfig,
		Labels:       labels,
		Annotations:  annotations,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{SecurityContext: sc},
	}
	cfg.Linux.Sysctls = sandboxSysctls(pod)
	if err := b.applySandboxCgroup(pod, cfg); err != nil {
		return nil, err
	}
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort == 0 {
				continue
			}
			proto, err := protocol(p.Protocol)
			if err != nil {
				return nil, fmt.Errorf("sandbox config of %s: container %s: %w", podDesc(pod), pod.Spec.Containers[i].Name, err)
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP,
			})
		}
	}
	return cfg, nil
}

// hasPrivilegedContainer reports whether any container of the pod (init,
// app or ephemeral) asks to be privileged.
func hasPrivilegedContainer(pod *v1.Pod) bool {
	privileged := func(sc *v1.SecurityContext) bool { return sc != nil && sc.Privileged != nil && *sc.Privileged }
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if privileged(cs[i].SecurityContext) {
				return true
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged(pod.Spec.EphemeralContainers[i].SecurityContext) {
			return true
		}
	}
	return false
}

func protocol(p v1.Protocol) (runtimeapi.Protocol, error) {
	switch p {
	case "", v1.ProtocolTCP:
		return runtimeapi.Protocol_TCP, nil
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP, nil
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP, nil
	}
	return 0, fmt.Errorf("unknown port protocol %q", p)
}

// dnsConfig returns the sandbox's DNS config, as package dns decides it
// from the pod, the cluster's DNS and the host's resolv.conf (read anew
// each time, as upstream's), and records the events it asks for.
func (b *Builder) dnsConfig(pod *v1.Pod) (*runtimeapi.DNSConfig, error) {
	in := dns.Input{Pod: pod, ClusterDNS: b.opts.ClusterDNS, ClusterDomain: b.opts.ClusterDomain, HostIPs: b.opts.HostIPs}
	if path := b.opts.ResolvConf; path != "" {
		host, err := dns.ReadResolvConf(path)
		if err != nil {
			return nil, fmt.Errorf("host DNS configuration: %w", err)
		}
		in.Host = &host
	}
	r := dns.ForPod(in)
	if rec := b.opts.Recorder; rec != nil {
		for _, e := range r.Events {
			var obj runtime.Object = pod
			if e.OnNode {
				obj = &v1.ObjectReference{Kind: "Node", Name: b.opts.NodeName}
			}
			rec.Eventf(obj, v1.EventTypeWarning, e.Reason, "%s", e.Message)
		}
	}
	return r.Config, nil
}

// ContainerConfig builds the CRI config of container c of the pod:
// metadata (name and attempt = restartCount), image (imageRef, the
// reference the pull returned, else c.Image), command, args, env (with the
// downward API and resource fields; podIPs are the sandbox's), working dir,
// mounts, log path, labels and annotations, resources and security
// context; then Options.Devices adds the container's devices, and
// Options.ClaimDevices the CDI devices of its resource claims. ctype is the
// container's type as cri.ContainerTypeAnnotation holds it
// (cri.ContainerTypeRegular, ContainerTypeInit, ContainerTypeEphemeral).
// images are the pulled images of the pod's image volumes (nil when it has
// none): the container's mounts of them are the runtime's mounts of those
// images (see ImageVolumes).
//
// An error (a reference the container cannot resolve, a missing volume, a
// bad subPath, a security context the node cannot honour) is the
// container's CreateContainerConfigError, as upstream's; its message is
// the StatusMessage() of an error in its chain that has that method (found
// with errors.As: upstream's words, where the error says more for logs),
// else its text.
func (b *Builder) ContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, ctype string, restartCount int, podIPs []string, imageRef string, images ImageVolumes) (*runtimeapi.ContainerConfig, error) {
	env, vars, err := b.envs(ctx, pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	mounts, err := b.mounts(pod, c, images)
	if err != nil {
		return nil, err
	}
	if err := b.recursiveReadOnly(pod, c, mounts); err != nil {
		return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
	}
	if err := b.verifyRunAsNonRoot(ctx, pod, c); err != nil {
		return nil, err
	}
	if m, err := b.terminationMessageMount(pod, c, restartCount); err != nil {
		return nil, err
	} else if m != nil {
		mounts = append(mounts, m)
	}
	if m, err := b.hostsMount(pod, c, podIPs); err != nil {
		return nil, err
	} else if m != nil {
		mounts = append(mounts, m)
	}
	annotations := map[string]string{
		cri.ContainerHashAnnotation:                     FormatHash(HashContainer(c)),
		cri.ContainerRestartCountAnnotation:             strconv.Itoa(restartCount),
		cri.ContainerTerminationMessagePathAnnotation:   c.TerminationMessagePath,
		cri.ContainerTerminationMessagePolicyAnnotation: string(c.TerminationMessagePolicy),
		cri.ContainerTypeAnnotation:                     ctype,
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		annotations[cri.PodTerminationGracePeriodAnnotation] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if pod.DeletionGracePeriodSeconds != nil {
		annotations[cri.PodDeletionGracePeriodAnnotation] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		b, err := json.Marshal(c.Lifecycle.PreStop)
		if err == nil {
			annotations[cri.ContainerPreStopHandlerAnnotation] = string(b)
		}
	}
	if podspec.RestartsOnResize(c, v1.ResourceMemory) {
		// The runtime cannot tell a memory request (no cgroup holds it):
		// it is kept here for a resize that restarts the container.
		annotations[MemoryRequestAnnotation] = strconv.FormatInt(c.Resources.Requests.Memory().Value(), 10)
	}
	if len(c.Ports) != 0 {
		b, err := json.Marshal(c.Ports)
		if err == nil {
			annotations[cri.ContainerPortsAnnotation] = string(b)
		}
	}
	sc, err := b.containerSecurityContext(pod, c)
	if err != nil {
		return nil, err
	}
	image := c.Image
	if imageRef != "" {
		image = imageRef
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     expansion.ExpandAll(c.Command, vars),
		Args:        expansion.ExpandAll(c.Args, vars),
		WorkingDir:  c.WorkingDir,
		Envs:        env,
		Mounts:      mounts,
		Labels:      cri.ContainerLabels(pod.UID, pod.Name, pod.Namespace, c.Name),
		Annotations: annotations,
		LogPath:     filepath.Join(c.Name, strconv.Itoa(restartCount)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       b.linuxResources(pod, c),
			SecurityContext: sc,
		},
	}
	if b.opts.Devices != nil {
		if err := b.opts.Devices.ApplyDevices(ctx, pod, c, cfg); err != nil {
			return nil, err
		}
	}
	if b.opts.ClaimDevices != nil {
		ids, err := b.opts.ClaimDevices.CDIDevices(pod, c)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: id})
		}
	}
	return cfg, nil
}

// Resources translates a container's requests and limits as upstream does:
// CPU shares from the CPU request (1024 per CPU, at least 2, at most
// 262144, the kernel's largest), a CFS quota over a 100ms period from the
// CPU limit (at least 1ms), the memory limit. In a pod that sets
// pod-level resources (podspec.HasPodLevelResources), a container without
// a CPU or memory limit of its own runs with the pod's, as upstream's
// (PodLevelResources, beta and on since 1.34); without a CPU request, its
// shares then come from the pod's CPU limit.
//
// The CFS period is DefaultCPUCFSQuotaPeriod; Builder.Resources uses the
// Builder's Options.CPUCFSQuotaPeriod. Comparisons in milli-CPU (a resize
// weighed against what runs) do not depend on the period.
func Resources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	return resources(pod, c, DefaultCPUCFSQuotaPeriod)
}

// Resources is the package's Resources with the Builder's CFS period
// (Options.CPUCFSQuotaPeriod): the container's CpuPeriod in microseconds,
// and its CpuQuota the limit's share of it, never below 1ms, as upstream's
// milliCPUToQuota.
func (b *Builder) Resources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	return resources(pod, c, b.opts.CPUCFSQuotaPeriod)
}

func resources(pod *v1.Pod, c *v1.Container, period time.Duration) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	req, lim := c.Resources.Requests, c.Resources.Limits
	cpuReq, hasReq := req[v1.ResourceCPU]
	cpuLim, hasLim := lim[v1.ResourceCPU]
	memLim, hasMem := lim[v1.ResourceMemory]
	if podspec.HasPodLevelResources(pod) {
		podLim := pod.Spec.Resources.Limits
		if q, ok := podLim[v1.ResourceCPU]; ok && cpuLim.IsZero() && !q.IsZero() {
			cpuLim, hasLim = q, true
		}
		if q, ok := podLim[v1.ResourceMemory]; ok && memLim.IsZero() && !q.IsZero() {
			memLim, hasMem = q, true
		}
	}
	if !hasReq && hasLim {
		cpuReq, hasReq = cpuLim, true
	}
	shares := int64(minShares)
	if hasReq {
		shares = min(max(cpuReq.MilliValue()*sharesPerCPU/1000, minShares), maxShares)
	}
	r.CpuShares = shares
	if hasLim {
		r.CpuPeriod = period.Microseconds()
		r.CpuQuota = max(cpuLim.MilliValue()*r.CpuPeriod/1000, minQuotaValue)
	}
	if hasMem {
		r.MemoryLimitInBytes = memLim.Value()
	}
	return r
}

// linuxResources is Resources with the container's oom_score_adj
// (OOMScoreAdj), its huge page limits (HugepageLimits), where the node accounts swap
// (Options.MemorySwapController) the swap limit set to the memory limit, its
// CPUs (Options.CPUs) and its memory's NUMA nodes (Options.MemoryNodes).
func (b *Builder) linuxResources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := b.Resources(pod, c)
	r.OomScoreAdj = OOMScoreAdj(pod, c, b.opts.MemoryCapacity)
	r.HugepageLimits = HugepageLimits(pod, c, b.opts.HugePageSizes)
	if b.opts.MemorySwapController {
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
	}
	if b.opts.CPUs != nil {
		cpus, exclusive := b.opts.CPUs.ContainerCPUSet(pod, c)
		r.CpusetCpus = cpus
		if exclusive && r.CpuQuota > 0 {
			r.CpuQuota = -1
		}
	}
	if b.opts.MemoryNodes != nil {
		r.CpusetMems = b.opts.MemoryNodes.ContainerMemoryNodes(pod, c)
	}
	return r
}

// terminationMessageMount creates the host file behind the container's
// terminationMessagePath and returns its mount; nil without PodsDir or path.
func (b *Builder) terminationMessageMount(pod *v1.Pod, c *v1.Container, restartCount int) (*runtimeapi.Mount, error) {
	if b.opts.PodsDir == "" || c.TerminationMessagePath == "" {
		return nil, nil
	}
	if !filepath.IsLocal(string(pod.UID)) || !filepath.IsLocal(c.Name) || strings.ContainsRune(string(pod.UID)+c.Name, '/') {
		return nil, fmt.Errorf("container %s: pod UID %q or container name is not a plain path element", c.Name, pod.UID)
	}
	if !path.IsAbs(c.TerminationMessagePath) {
		return nil, fmt.Errorf("container %s: terminationMessagePath %q is not absolute", c.Name, c.TerminationMessagePath)
	}
	dir := filepath.Join(b.opts.PodsDir, string(pod.UID), "containers", c.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("container %s: termination message file: %w", c.Name, err)
	}
	file := filepath.Join(dir, strconv.Itoa(restartCount))
	f, err := os.OpenFile(file, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return nil, fmt.Errorf("container %s: termination message file: %w", c.Name, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("container %s: termination message file: %w", c.Name, err)
	}
	// Writable by whatever user the container runs as, whatever the
	// kubelet's umask, as upstream makes it.
	if err := os.Chmod(file, 0o666); err != nil {
		return nil, fmt.Errorf("container %s: termination message file: %w", c.Name, err)
	}
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: file, SelinuxRelabel: b.opts.SELinuxEnabled}, nil
}
