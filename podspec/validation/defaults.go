package validation

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Defaults the API server would set, written out because the defaulting
// functions of k8s.io/kubernetes/pkg/apis/core/v1 are not importable.
const (
	// DefaultTerminationGracePeriodSeconds is spec.terminationGracePeriodSeconds
	// when unset.
	DefaultTerminationGracePeriodSeconds int64 = 30
	// DefaultSchedulerName is spec.schedulerName when unset.
	DefaultSchedulerName = "default-scheduler"
	// DefaultTerminationMessagePath is a container's terminationMessagePath
	// when unset.
	DefaultTerminationMessagePath = "/dev/termination-log"
	// DefaultVolumeMode is the defaultMode of secret, configMap, downwardAPI
	// and projected volumes when unset (0644).
	DefaultVolumeMode int32 = 0o644
)

// DefaultPod sets the fields of pod that the API server defaults and that a
// kubelet relies on, where they are unset: restartPolicy Always, dnsPolicy
// ClusterFirst, terminationGracePeriodSeconds 30 (and 1 for a negative one,
// as the API server's decoding does), schedulerName default-scheduler, an
// empty securityContext, enableServiceLinks true; in every container (init,
// regular and ephemeral) terminationMessagePath /dev/termination-log,
// terminationMessagePolicy File, imagePullPolicy by the image's tag (Always
// for ":latest" or no tag, IfNotPresent otherwise, also for a digest), port
// protocol TCP (and hostPort = containerPort with hostNetwork), resource
// requests copied from limits where only the limit is given, probe
// timeoutSeconds 1, periodSeconds 10, successThreshold 1, failureThreshold
// 3, HTTP probe and handler scheme HTTP and path "/", fieldRef apiVersion
// v1 (in env and in downwardAPI and projected volumes); a volume with no
// source (or only sources unknown to this API version, which decoding
// dropped) an emptyDir; secret, configMap, downwardAPI and projected volume
// defaultMode 0644, projected service account tokens expirationSeconds
// 3600, image volumes' pullPolicy by their reference's tag, and hostPath
// type "" (unset). It sets nothing else, in particular no name, UID or
// status: for a static pod, package syncloop/source's ApplyStaticDefaults
// does.
//
// DefaultPod is idempotent: applying it twice is applying it once.
func DefaultPod(pod *v1.Pod) {
	s := &pod.Spec
	if s.RestartPolicy == "" {
		s.RestartPolicy = v1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = v1.DNSClusterFirst
	}
	switch g := s.TerminationGracePeriodSeconds; {
	case g == nil:
		d := DefaultTerminationGracePeriodSeconds
		s.TerminationGracePeriodSeconds = &d
	case *g < 0:
		// Upstream's conversion of a pod makes a negative grace period 1
		// (the API server warns "must be >= 0; negative values are invalid
		// and will be treated as 1").
		one := int64(1)
		s.TerminationGracePeriodSeconds = &one
	}
	if s.SchedulerName == "" {
		s.SchedulerName = DefaultSchedulerName
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &v1.PodSecurityContext{}
	}
	if s.EnableServiceLinks == nil {
		t := true
		s.EnableServiceLinks = &t
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i], s.HostNetwork)
	}
	for i := range s.EphemeralContainers {
		c := (*v1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(c, s.HostNetwork)
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i].VolumeSource)
	}
}

func defaultContainer(c *v1.Container, hostNetwork bool) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = PullPolicyForImage(c.Image)
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = v1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	if len(c.Resources.Limits) > 0 {
		for name, q := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[name]; ok {
				continue
			}
			if c.Resources.Requests == nil {
				c.Resources.Requests = v1.ResourceList{}
			}
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		if p.TimeoutSeconds == 0 {
			p.TimeoutSeconds = 1
		}
		if p.PeriodSeconds == 0 {
			p.PeriodSeconds = 10
		}
		if p.SuccessThreshold == 0 {
			p.SuccessThreshold = 1
		}
		if p.FailureThreshold == 0 {
			p.FailureThreshold = 3
		}
		defaultHTTPGet(p.HTTPGet)
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
}

func defaultHTTPGet(h *v1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

func defaultVolume(vs *v1.VolumeSource) {
	mode := func(m **int32) {
		if *m == nil {
			v := DefaultVolumeMode
			*m = &v
		}
	}
	fieldRefs := func(items []v1.DownwardAPIVolumeFile) {
		for i := range items {
			if fr := items[i].FieldRef; fr != nil && fr.APIVersion == "" {
				fr.APIVersion = "v1"
			}
		}
	}
	if *vs == (v1.VolumeSource{}) { // every source nil
		vs.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	switch {
	case vs.Secret != nil:
		mode(&vs.Secret.DefaultMode)
	case vs.ConfigMap != nil:
		mode(&vs.ConfigMap.DefaultMode)
	case vs.DownwardAPI != nil:
		mode(&vs.DownwardAPI.DefaultMode)
		fieldRefs(vs.DownwardAPI.Items)
	case vs.Projected != nil:
		mode(&vs.Projected.DefaultMode)
		for i := range vs.Projected.Sources {
			src := &vs.Projected.Sources[i]
			if src.DownwardAPI != nil {
				fieldRefs(src.DownwardAPI.Items)
			}
			if t := src.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				hour := int64(3600)
				t.ExpirationSeconds = &hour
			}
		}
	case vs.Image != nil:
		if vs.Image.PullPolicy == "" {
			vs.Image.PullPolicy = PullPolicyForImage(vs.Image.Reference)
		}
	case vs.HostPath != nil:
		if vs.HostPath.Type == nil {
			t := v1.HostPathUnset
			vs.HostPath.Type = &t
		}
	}
}

// PullPolicyForImage is the imagePullPolicy the API server defaults for an
// image: Always when the tag is "latest" or there is no tag (and no
// digest), IfNotPresent otherwise.
func PullPolicyForImage(image string) v1.PullPolicy {
	if strings.Contains(image, "@") {
		return v1.PullIfNotPresent // pinned by digest
	}
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:] // a registry's port is not a tag
	}
	i := strings.LastIndex(name, ":")
	if i < 0 || name[i+1:] == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}
