package podsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/internal/expansion"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// Upstream's CPU constants for translating requests and limits.
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	quotaPeriod   = 100000 // µs
	minQuotaValue = 1000
)

// SandboxConfig builds the CRI sandbox config of a pod: metadata with the
// attempt, hostname, log directory, DNS, port mappings, host namespaces,
// the identity labels plus the pod's labels, and the pod's annotations.
func (s *Syncer) SandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
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
	hostname, domain := podHostnameAndDomain(pod, s.opts.ClusterDomain)
	if domain != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
		// The kernel's nodename holds 64 characters.
		fqdn := hostname + "." + domain
		if len(fqdn) > 64 {
			return nil, fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (64 characters is the max, %d characters requested)", fqdn, len(fqdn))
		}
		hostname = fqdn
	}
	if pod.Spec.HostNetwork {
		// The node's UTS namespace: the runtime must not set a hostname.
		hostname = ""
	}
	sc, err := s.sandboxSecurityContext(pod)
	if err != nil {
		return nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Hostname:     hostname,
		LogDirectory: LogDirectory(s.opts.LogRoot, pod),
		DnsConfig:    s.dnsConfig(pod),
		Labels:       labels,
		Annotations:  annotations,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{SecurityContext: sc},
	}
	cfg.Linux.Sysctls = sandboxSysctls(pod)
	if err := s.applySandboxCgroup(pod, cfg); err != nil {
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

// dnsConfig returns the sandbox's DNS config per the pod's dnsPolicy.
func (s *Syncer) dnsConfig(pod *v1.Pod) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{}
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = v1.DNSClusterFirst
	}
	if policy == v1.DNSClusterFirstWithHostNet || (policy == v1.DNSClusterFirst && !pod.Spec.HostNetwork) {
		if len(s.opts.ClusterDNS) != 0 {
			cfg.Servers = append(cfg.Servers, s.opts.ClusterDNS...)
			if d := s.opts.ClusterDomain; d != "" {
				cfg.Searches = append(cfg.Searches, pod.Namespace+".svc."+d, "svc."+d, d)
			}
			cfg.Options = append(cfg.Options, "ndots:5")
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = append(cfg.Servers, dc.Nameservers...)
		cfg.Searches = append(cfg.Searches, dc.Searches...)
		for _, o := range dc.Options {
			if o.Value != nil {
				cfg.Options = append(cfg.Options, o.Name+":"+*o.Value)
			} else {
				cfg.Options = append(cfg.Options, o.Name)
			}
		}
	}
	if len(cfg.Servers) == 0 && len(cfg.Searches) == 0 && len(cfg.Options) == 0 {
		return nil
	}
	return cfg
}

// ContainerConfig builds the CRI config of one container: metadata (name and
// attempt = restartCount), image, command, args, env (with the downward API
// and resource fields), working dir, mounts, log path, labels and
// annotations, resources and security context. An error (a reference the
// container cannot resolve, a missing volume, a bad subPath) is what
// SyncPod reports as CreateContainerConfigError.
func (s *Syncer) ContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, ctype string, restartCount int, podIPs []string, imageRef string) (*runtimeapi.ContainerConfig, error) {
	env, vars, err := s.envs(ctx, pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	mounts, err := s.mounts(pod, c)
	if err != nil {
		return nil, err
	}
	if err := s.recursiveReadOnly(pod, c, mounts); err != nil {
		return nil, fmt.Errorf("failed to resolve recursive read-only mode: %w", err)
	}
	if err := s.verifyRunAsNonRoot(ctx, pod, c); err != nil {
		return nil, err
	}
	if m, err := s.terminationMessageMount(pod, c, restartCount); err != nil {
		return nil, err
	} else if m != nil {
		mounts = append(mounts, m)
	}
	if m, err := s.hostsMount(pod, c, podIPs); err != nil {
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
	sc, err := s.containerSecurityContext(pod, c)
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
			Resources:       s.linuxResources(pod, c),
			SecurityContext: sc,
		},
	}
	if s.opts.Devices != nil {
		if err := s.opts.Devices.ApplyDevices(ctx, pod, c, cfg); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// Resources translates a container's requests and limits as upstream does:
// CPU shares from the CPU request (1024 per CPU, at least 2, at most
// 262144, the kernel's largest), a CFS quota
// over a 100ms period from the CPU limit (at least 1ms), the memory limit.
func Resources(c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	req, lim := c.Resources.Requests, c.Resources.Limits
	cpuReq, hasReq := req[v1.ResourceCPU]
	cpuLim, hasLim := lim[v1.ResourceCPU]
	if !hasReq && hasLim {
		cpuReq, hasReq = cpuLim, true
	}
	shares := int64(minShares)
	if hasReq {
		shares = min(max(cpuReq.MilliValue()*sharesPerCPU/1000, minShares), maxShares)
	}
	r.CpuShares = shares
	if hasLim {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = max(cpuLim.MilliValue()*quotaPeriod/1000, minQuotaValue)
	}
	if m, ok := lim[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = m.Value()
	}
	return r
}

// linuxResources is Resources with the container's oom_score_adj
// (OOMScoreAdj) and, where the node accounts swap
// (Options.MemorySwapController), the swap limit set to the memory limit.
func (s *Syncer) linuxResources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := Resources(c)
	r.OomScoreAdj = OOMScoreAdj(pod, c, s.opts.MemoryCapacity)
	if s.opts.MemorySwapController {
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
	}
	return r
}

// envs resolves the container's environment as upstream does: first the
// service variables (ServiceEnv), then the keys of envFrom's configMaps and
// secrets (with their prefix, later sources overriding earlier ones), then
// env in order, each value expanding $(NAME)
// with the variables defined before it. It returns the variables too, for
// the expansion of command and args. A failure's error has upstream's text
// as its waiting message (e.g. `configmap "x" not found`).
func (s *Syncer) envs(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) ([]*runtimeapi.KeyValue, map[string]string, error) {
	cms := envObjects[*v1.ConfigMap]{ctx: ctx, pod: pod, kind: "configMap", title: "ConfigMap",
		data: func(cm *v1.ConfigMap) map[string]string { return cm.Data }}
	secrets := envObjects[*v1.Secret]{ctx: ctx, pod: pod, kind: "secret", title: "Secret",
		data: func(sec *v1.Secret) map[string]string { return stringData(sec.Data) }}
	if s.opts.ConfigMaps != nil {
		cms.get = s.opts.ConfigMaps.GetConfigMap
	}
	if s.opts.Secrets != nil {
		secrets.get = s.opts.Secrets.GetSecret
	}
	services, err := s.serviceEnv(pod)
	if err != nil {
		return nil, nil, &messageError{msg: err.Error(), err: fmt.Errorf("container %s: service environment: %w", c.Name, err)}
	}
	var out []*runtimeapi.KeyValue
	vars := make(map[string]string, len(c.Env)+len(services))
	index := make(map[string]int, len(c.Env)+len(services))
	set := func(k, v string) {
		vars[k] = v
		if i, ok := index[k]; ok {
			out[i].Value = []byte(v)
			return
		}
		index[k] = len(out)
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	fail := func(what string, err error) ([]*runtimeapi.KeyValue, map[string]string, error) {
		return nil, nil, &messageError{msg: err.Error(), err: fmt.Errorf("container %s: %s: %w", c.Name, what, err)}
	}
	// The service variables come first: everything the pod defines
	// overrides them.
	for _, k := range slices.Sorted(maps.Keys(services)) {
		set(k, services[k])
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		var err error
		switch {
		case from.ConfigMapRef != nil:
			data, err = cms.all(from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
		case from.SecretRef != nil:
			data, err = secrets.all(from.SecretRef.Name, from.SecretRef.Optional)
		}
		if err != nil {
			return fail("envFrom", err)
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if v != "" {
			v = expansion.Expand(v, vars)
		} else if vf := e.ValueFrom; vf != nil {
			var err error
			skip := false
			switch {
			case vf.FieldRef != nil:
				v, err = s.fieldRef(pod, vf.FieldRef.FieldPath, podIPs)
			case vf.ResourceFieldRef != nil:
				v, err = resourceFieldRef(pod, c, vf.ResourceFieldRef, s.opts.NodeAllocatable)
			case vf.ConfigMapKeyRef != nil:
				ref := vf.ConfigMapKeyRef
				v, skip, err = cms.key(ref.Name, ref.Key, ref.Optional)
			case vf.SecretKeyRef != nil:
				ref := vf.SecretKeyRef
				v, skip, err = secrets.key(ref.Name, ref.Key, ref.Optional)
			default:
				err = errors.New("valueFrom names no source")
			}
			if err != nil {
				return fail("env "+e.Name, err)
			}
			if skip {
				continue
			}
		}
		set(e.Name, v)
	}
	return out, vars, nil
}

// envObjects looks up the configMaps (or the secrets) of one container's
// environment, each at most once.
type envObjects[T any] struct {
	ctx context.Context
	pod *v1.Pod
	// kind and title name the objects in messages, upstream's way:
	// "configMap" and "ConfigMap", "secret" and "Secret".
	kind, title string
	// get is the source; nil means none.
	get func(ctx context.Context, namespace, name string) (T, error)
	// data gives an object's keys and values.
	data func(T) map[string]string
	seen map[string]map[string]string
}

// all returns the keys and values of the named object of the pod's
// namespace; nil (and no error) when it is missing and optional.
func (o *envObjects[T]) all(name string, optional *bool) (map[string]string, error) {
	if d, ok := o.seen[name]; ok {
		return d, nil
	}
	if o.get == nil {
		return nil, fmt.Errorf("couldn't get %s %s/%s, no kubeClient defined", o.kind, o.pod.Namespace, name)
	}
	obj, err := o.get(o.ctx, o.pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			err = nil
		}
		return nil, err
	}
	d := o.data(obj)
	if d == nil {
		d = map[string]string{}
	}
	if o.seen == nil {
		o.seen = map[string]map[string]string{}
	}
	o.seen[name] = d
	return d, nil
}

// key resolves a key reference; skip says the variable is left out (an
// optional reference to a missing object or key).
func (o *envObjects[T]) key(name, key string, optional *bool) (v string, skip bool, err error) {
	d, err := o.all(name, optional)
	if err != nil || d == nil {
		return "", err == nil, err
	}
	v, ok := d[key]
	if !ok {
		if optional != nil && *optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, o.title, o.pod.Namespace, name)
	}
	return v, false, nil
}

func stringData(m map[string][]byte) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// fieldRef resolves a downward API field path.
func (s *Syncer) fieldRef(pod *v1.Pod, fieldPath string, podIPs []string) (string, error) {
	if k, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return s.opts.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		if len(podIPs) != 0 {
			return podIPs[0], nil
		}
		if pod.Spec.HostNetwork && len(s.opts.HostIPs) != 0 {
			return s.opts.HostIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		if len(podIPs) == 0 && pod.Spec.HostNetwork {
			return strings.Join(s.opts.HostIPs, ","), nil
		}
		return strings.Join(podIPs, ","), nil
	case "status.hostIP":
		if len(s.opts.HostIPs) != 0 {
			return s.opts.HostIPs[0], nil
		}
		return "", nil
	case "status.hostIPs":
		return strings.Join(s.opts.HostIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", fieldPath)
}

// subscript parses field['key'].
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// resourceFieldRef resolves limits.* and requests.* of a container; an
// unset limit is reported as upstream does without node allocatable: 0 is
// replaced by nothing, so the value is the request or empty.
// A limit the container does not set reads as the node's allocatable (its
// limit is, in effect, the node), an unset request as zero, as upstream.
func resourceFieldRef(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = findContainer(pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	var list v1.ResourceList
	switch kind {
	case "limits":
		list = target.Resources.Limits
	case "requests":
		list = target.Resources.Requests
	default:
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	q, ok := list[v1.ResourceName(name)]
	switch {
	case ok:
	case kind == "requests":
		// An unset request reads as zero, as upstream's.
	default:
		if q, ok = allocatable[v1.ResourceName(name)]; !ok {
			return "", fmt.Errorf("limit %q is not set on container %s and the node's allocatable is not known", name, target.Name)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(v1.ResourceCPU) {
		// Round up, as upstream does for CPU.
		m, d := q.MilliValue(), divisor.MilliValue()
		return strconv.FormatInt((m+d-1)/d, 10), nil
	}
	v, d := q.Value(), divisor.Value()
	return strconv.FormatInt((v+d-1)/d, 10), nil
}

// mounts builds the CRI mounts of the container's volumeMounts.
func (s *Syncer) mounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	if len(c.VolumeMounts) == 0 {
		return nil, nil
	}
	if cm, ok := s.volumes.(ContainerMounts); ok {
		m, err := cm.Mounts(pod, c)
		if err != nil {
			err = fmt.Errorf("container %s: volumes: %w", c.Name, err)
			// An error that has a message for the container's status
			// (volume.SubPathError's, upstream's, without host paths)
			// shows that one.
			var sm interface{ StatusMessage() string }
			if errors.As(err, &sm) {
				return nil, &messageError{msg: sm.StatusMessage(), err: err}
			}
			return nil, err
		}
		return m, nil
	}
	var paths map[string]string
	if s.volumes != nil {
		var err error
		if paths, err = s.volumes.VolumeHostPaths(pod); err != nil {
			return nil, fmt.Errorf("container %s: volumes: %w", c.Name, err)
		}
	}
	out := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for _, vm := range c.VolumeMounts {
		host, ok := paths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s: volume %q is not mounted on the host (unknown or not yet set up)", c.Name, vm.Name)
		}
		if vm.SubPath != "" {
			if err := validSubPath(vm.SubPath); err != nil {
				return nil, fmt.Errorf("container %s: volumeMount %s: %w", c.Name, vm.Name, err)
			}
			host = filepath.Join(host, vm.SubPath)
		}
		if !path.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("container %s: volumeMount %s: mountPath %q is not absolute", c.Name, vm.Name, vm.MountPath)
		}
		m := &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: host, Readonly: vm.ReadOnly}
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case v1.MountPropagationHostToContainer:
				m.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case v1.MountPropagationBidirectional:
				m.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			case v1.MountPropagationNone:
			default:
				return nil, fmt.Errorf("container %s: volumeMount %s: unknown mountPropagation %q", c.Name, vm.Name, *vm.MountPropagation)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// validSubPath refuses absolute subPaths and any that climb out with "..".
func validSubPath(p string) error {
	if path.IsAbs(p) || filepath.IsAbs(p) {
		return fmt.Errorf("subPath %q must be a relative path", p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return fmt.Errorf("subPath %q must not contain '..'", p)
		}
	}
	return nil
}

// terminationMessageMount creates the host file behind the container's
// terminationMessagePath and returns its mount; nil without PodsDir or path.
func (s *Syncer) terminationMessageMount(pod *v1.Pod, c *v1.Container, restartCount int) (*runtimeapi.Mount, error) {
	if s.opts.PodsDir == "" || c.TerminationMessagePath == "" {
		return nil, nil
	}
	if !filepath.IsLocal(string(pod.UID)) || !filepath.IsLocal(c.Name) || strings.ContainsRune(string(pod.UID)+c.Name, '/') {
		return nil, fmt.Errorf("container %s: pod UID %q or container name is not a plain path element", c.Name, pod.UID)
	}
	if !path.IsAbs(c.TerminationMessagePath) {
		return nil, fmt.Errorf("container %s: terminationMessagePath %q is not absolute", c.Name, c.TerminationMessagePath)
	}
	dir := filepath.Join(s.opts.PodsDir, string(pod.UID), "containers", c.Name)
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
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: file}, nil
}
