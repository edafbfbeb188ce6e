package validation

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidPod is wrapped by the error of a pod that fails validation
// (ValidatePod: what the API server refuses in a pod it creates, such as no
// containers, a negative probe period or a path with ".."). Package
// syncloop/source also wraps it when it refuses a static pod's manifest
// for its pod: no name, or references to API objects.
var ErrInvalidPod = errors.New("invalid pod")

// ValidatePod checks a pod of a static source as the API server checks a pod
// it is asked to create (upstream's ValidatePodCreate, which upstream's
// kubelet runs on every static manifest), for every field a kubelet acts on,
// with the API server's field paths and messages, as of Kubernetes 1.36 with
// its default feature gates. It expects a pod defaulted by DefaultPod (and,
// for a static pod, named and namespaced by package syncloop/source's
// ApplyStaticDefaults): a field the API server defaults is required here.
//
// It checks the metadata (name, namespace, labels and annotations, 256 KiB
// of annotations at most); the pod's numbers (activeDeadlineSeconds), enums
// (restartPolicy, dnsPolicy, os), names (hostname, subdomain, runtime class,
// readiness gates), DNS config and host aliases, and security context IDs;
// the volumes (names, exactly one source, and within the sources kubelets
// mount: paths, item keys and paths without "..", file modes, sizes); every
// container (names unique across init and regular containers, image, ports
// and host ports, env and envFrom, volume mounts naming a volume, at unique
// paths, subPaths without "..", resources, probes and lifecycle handlers,
// pull and termination message policies, restart policy and rules, security
// context); and it refuses ephemeral containers, which cannot be set on
// create. See docs/podspec-validation.md for the list and what it leaves
// out.
//
// Every problem is listed, with its field path and upstream's message, in an
// error that wraps ErrInvalidPod (`invalid pod default/x-node:
// [spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must
// be greater than or equal to 0, ...]`).
func ValidatePod(pod *v1.Pod) error {
	errs := validatePod(pod)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w %s: %v", ErrInvalidPod, PodRef(pod), errs.ToAggregate())
}

// validatePod is ValidatePod's list of errors, in upstream's order.
func validatePod(pod *v1.Pod) field.ErrorList {
	meta, spec := field.NewPath("metadata"), field.NewPath("spec")
	errs := apivalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, validatePodSpec(&pod.Spec, &pod.ObjectMeta, spec)...)

	// Checked for pods and not for pod templates.
	if pod.Spec.ServiceAccountName == "" {
		for i, vol := range pod.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for j, src := range vol.Projected.Sources {
				if src.ServiceAccountToken != nil {
					errs = append(errs, field.Forbidden(spec.Child("volumes").Index(i).Child("projected", "sources").Index(j).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	imageSpaces := func(name string, cs []v1.Container) {
		for i, c := range cs {
			if len(c.Image) != len(strings.TrimSpace(c.Image)) {
				errs = append(errs, field.Invalid(spec.Child(name).Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
			}
		}
	}
	imageSpaces("containers", pod.Spec.Containers)
	imageSpaces("initContainers", pod.Spec.InitContainers)

	// Checked on create only.
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(spec.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

// validatePodSpec checks the spec's fields a kubelet acts on.
func validatePodSpec(s *v1.PodSpec, meta *metav1.ObjectMeta, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(p.Child("terminationGracePeriodSeconds"), ""))
	}
	vols, verrs := validateVolumes(s.Volumes, meta, p.Child("volumes"))
	errs = append(errs, verrs...)
	c := containerContext{volumes: vols, grace: s.TerminationGracePeriodSeconds, os: s.OS, hostUsers: s.HostUsers == nil || *s.HostUsers}
	errs = append(errs, c.validateContainers(s.Containers, p.Child("containers"))...)
	errs = append(errs, c.validateInitContainers(s.InitContainers, s.Containers, p.Child("initContainers"))...)
	if s.Resources != nil {
		errs = append(errs, validateResources(s.Resources, podResourceName, p.Child("resources"))...)
	}
	errs = append(errs, validateHostNetworkPorts(s, p)...)
	errs = append(errs, oneOf(s.RestartPolicy, p.Child("restartPolicy"), v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever)...)
	errs = append(errs, oneOf(s.DNSPolicy, p.Child("dnsPolicy"), v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone)...)
	errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(s, p.Child("securityContext"))...)
	errs = append(errs, validateDNSConfig(s.DNSConfig, s.DNSPolicy, p.Child("dnsConfig"))...)
	for i, g := range s.ReadinessGates {
		errs = append(errs, qualifiedName(string(g.ConditionType), p.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	errs = append(errs, validateHostnameOverride(s, p)...)
	if s.ActiveDeadlineSeconds != nil {
		if v := *s.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(p.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if s.Hostname != "" {
		errs = append(errs, dns1123Label(s.Hostname, p.Child("hostname"))...)
	}
	if s.Subdomain != "" {
		errs = append(errs, dns1123Label(s.Subdomain, p.Child("subdomain"))...)
	}
	for i, a := range s.HostAliases {
		ap := p.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIPForLegacyField(ap.Child("ip"), a.IP, true, nil)...)
		for j, h := range a.Hostnames {
			errs = append(errs, dns1123Subdomain(h, ap.Child("hostnames").Index(j))...)
		}
	}
	if s.RuntimeClassName != nil {
		errs = append(errs, invalid(p.Child("runtimeClassName"), *s.RuntimeClassName, apivalidation.NameIsDNSSubdomain(*s.RuntimeClassName, false))...)
	}
	if s.OS != nil {
		switch {
		case s.OS.Name == "":
			errs = append(errs, field.Required(p.Child("os", "name"), ""))
		case s.OS.Name != v1.Linux && s.OS.Name != v1.Windows:
			errs = append(errs, field.NotSupported(p.Child("os"), s.OS.Name, []v1.OSName{v1.Linux, v1.Windows}))
		}
	}
	errs = append(errs, validateFileKeyRefVolumes(s, p)...)
	return errs
}

// oneOf requires v, and one of the supported values, listed in the order
// upstream's message lists them.
func oneOf[T ~string](v T, p *field.Path, supported ...T) field.ErrorList {
	switch {
	case v == "":
		return field.ErrorList{field.Required(p, "")}
	case !slices.Contains(supported, v):
		return field.ErrorList{field.NotSupported(p, v, supported)}
	}
	return nil
}

// required is a Required error when v is empty, else what check says of
// it.
func required(v string, p *field.Path, check func(string, *field.Path) field.ErrorList) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	return check(v, p)
}

// Upstream's limits on a pod's DNS configuration, from libc's resolver.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// validateDNSConfig checks the resolver configuration the kubelet writes:
// required with dnsPolicy None, at most 3 nameservers (IPs), 32 search
// domains (DNS subdomains, a trailing dot allowed, "." alone too) in 2048
// characters, named options.
func validateDNSConfig(c *v1.PodDNSConfig, policy v1.DNSPolicy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == v1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(p, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", v1.DNSNone))}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(p.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", v1.DNSNone))}
		}
	}
	if c == nil {
		return nil
	}
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(p.Child("nameservers"), c.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		errs = append(errs, validation.IsValidIPForLegacyField(p.Child("nameservers").Index(i), ns, true, nil)...)
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(p.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range c.Searches {
		if search == "." {
			continue
		}
		// "_" allowed: upstream's relaxed DNS search validation, locked
		// on since 1.34.
		search = strings.TrimSuffix(search, ".")
		errs = append(errs, invalid(p.Child("searches").Index(i), search, validation.IsDNS1123SubdomainWithUnderscore(search))...)
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(p.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validateHostNetworkPorts requires, with hostNetwork, every container port's
// hostPort to be its containerPort.
func validateHostNetworkPorts(s *v1.PodSpec, p *field.Path) field.ErrorList {
	if !s.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range s.Containers {
		for j, port := range c.Ports {
			if port.HostPort != port.ContainerPort {
				errs = append(errs, field.Invalid(p.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), port.HostPort,
					"must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// validatePodSecurityContext checks the user and group IDs the runtime is
// given, that a shared process namespace is not also the host's, and the
// seccomp and AppArmor profiles and supplemental groups policy.
func validatePodSecurityContext(s *v1.PodSpec, p *field.Path) field.ErrorList {
	sc := s.SecurityContext
	if sc == nil {
		sc = &v1.PodSecurityContext{}
	}
	var errs field.ErrorList
	if sc.FSGroup != nil {
		errs = append(errs, invalid(p.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	if sc.RunAsUser != nil {
		errs = append(errs, invalid(p.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, invalid(p.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, invalid(p.Child("supplementalGroups").Index(i), g, validation.IsValidGroupID(g))...)
	}
	if s.ShareProcessNamespace != nil && *s.ShareProcessNamespace && s.HostPID {
		// Upstream's internal pod keeps both in the security context, hence
		// the path.
		errs = append(errs, field.Invalid(p.Child("shareProcessNamespace"), *s.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	if sc.FSGroupChangePolicy != nil {
		switch *sc.FSGroupChangePolicy {
		case v1.FSGroupChangeAlways, v1.FSGroupChangeOnRootMismatch:
		default:
			errs = append(errs, field.NotSupported(p.Child("fsGroupChangePolicy"), sc.FSGroupChangePolicy,
				[]v1.PodFSGroupChangePolicy{v1.FSGroupChangeAlways, v1.FSGroupChangeOnRootMismatch}))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
	return append(errs, validateSupplementalGroupsPolicy(sc.SupplementalGroupsPolicy, p.Child("supplementalGroupsPolicy"))...)
}

// validateHostnameOverride checks spec.hostnameOverride (on by default since
// 1.35): not with setHostnameAsFQDN or hostNetwork, at most 64 characters, a
// DNS subdomain.
func validateHostnameOverride(s *v1.PodSpec, p *field.Path) field.ErrorList {
	if s.HostnameOverride == nil {
		return nil
	}
	var errs field.ErrorList
	hp := p.Child("hostnameOverride")
	if s.SetHostnameAsFQDN != nil && *s.SetHostnameAsFQDN {
		errs = append(errs, field.Forbidden(hp, "may not be specified when setHostnameAsFQDN is true"))
	}
	if s.HostNetwork {
		errs = append(errs, field.Forbidden(hp, "may not be specified when hostNetwork is true"))
	}
	if len(*s.HostnameOverride) > 64 {
		errs = append(errs, field.TooLong(hp, "", 64))
	}
	return append(errs, dns1123Subdomain(*s.HostnameOverride, hp)...)
}

// validateFileKeyRefVolumes requires an env var's fileKeyRef to name an
// emptyDir volume of the pod.
func validateFileKeyRefVolumes(s *v1.PodSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	sources := make(map[string]*v1.VolumeSource, len(s.Volumes))
	for i := range s.Volumes {
		sources[s.Volumes[i].Name] = &s.Volumes[i].VolumeSource
	}
	visitContainers(s, p, func(c *v1.Container, cp *field.Path) {
		for j, env := range c.Env {
			if env.ValueFrom == nil || env.ValueFrom.FileKeyRef == nil {
				continue
			}
			name := env.ValueFrom.FileKeyRef.VolumeName
			np := cp.Child("env").Index(j).Child("valueFrom", "fileKeyRef", "volumeName")
			if src, ok := sources[name]; !ok {
				errs = append(errs, field.NotFound(np, name))
			} else if src.EmptyDir == nil {
				errs = append(errs, field.Invalid(np, name, "referenced volume must be of type emptyDir"))
			}
		}
	})
	return errs
}

// visitContainers calls f on every container, init ones first, with its
// field path.
func visitContainers(s *v1.PodSpec, p *field.Path, f func(c *v1.Container, cp *field.Path)) {
	for i := range s.InitContainers {
		f(&s.InitContainers[i], p.Child("initContainers").Index(i))
	}
	for i := range s.Containers {
		f(&s.Containers[i], p.Child("containers").Index(i))
	}
	for i := range s.EphemeralContainers {
		f((*v1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon), p.Child("ephemeralContainers").Index(i))
	}
}

// invalid turns a validator's messages about value into Invalid errors.
func invalid(p *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, value, m))
	}
	return errs
}

func dns1123Label(v string, p *field.Path) field.ErrorList {
	return invalid(p, v, validation.IsDNS1123Label(v))
}

func dns1123Subdomain(v string, p *field.Path) field.ErrorList {
	return invalid(p, v, validation.IsDNS1123Subdomain(v))
}

func qualifiedName(v string, p *field.Path) field.ErrorList {
	return invalid(p, v, validation.IsQualifiedName(v))
}

// PodRef names a pod as the errors of ValidatePod name it:
// "namespace/name", the name alone when the namespace is empty, "<no name>"
// when the name is.
func PodRef(pod *v1.Pod) string {
	if pod.Name == "" {
		return "<no name>"
	}
	if pod.Namespace == "" {
		return pod.Name
	}
	return pod.Namespace + "/" + pod.Name
}
