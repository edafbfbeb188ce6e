package containerconfig

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// DefaultSeccompProfileRoot is where Localhost seccomp profiles are looked
// up when Options.SeccompProfileRoot is empty: upstream's
// <root-dir>/seccomp with its default root directory.
const DefaultSeccompProfileRoot = "/var/lib/kubelet/seccomp"

// effectiveSecurityContext is the container's security context with the
// pod's filled in where the container says nothing, as the runtime is to
// apply it: the pod gives SELinux options, users, groups and runAsNonRoot;
// capabilities, privileged, the root filesystem, privilege escalation and
// the /proc mount are the container's alone. It never returns nil and
// never shares memory with the pod.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	out := &v1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		out.SELinuxOptions = psc.SELinuxOptions.DeepCopy()
		out.WindowsOptions = psc.WindowsOptions.DeepCopy()
		out.RunAsUser = copyPtr(psc.RunAsUser)
		out.RunAsGroup = copyPtr(psc.RunAsGroup)
		out.RunAsNonRoot = copyPtr(psc.RunAsNonRoot)
	}
	csc := c.SecurityContext
	if csc == nil {
		return out
	}
	if csc.SELinuxOptions != nil {
		out.SELinuxOptions = csc.SELinuxOptions.DeepCopy()
	}
	if csc.RunAsUser != nil {
		out.RunAsUser = copyPtr(csc.RunAsUser)
	}
	if csc.RunAsGroup != nil {
		out.RunAsGroup = copyPtr(csc.RunAsGroup)
	}
	if csc.RunAsNonRoot != nil {
		out.RunAsNonRoot = copyPtr(csc.RunAsNonRoot)
	}
	out.Capabilities = csc.Capabilities.DeepCopy()
	out.Privileged = copyPtr(csc.Privileged)
	out.ReadOnlyRootFilesystem = copyPtr(csc.ReadOnlyRootFilesystem)
	out.AllowPrivilegeEscalation = copyPtr(csc.AllowPrivilegeEscalation)
	out.ProcMount = copyPtr(csc.ProcMount)
	return out
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// selinuxOption translates SELinux options for the runtime; nil for none.
func selinuxOption(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// supplementalGroupsPolicy translates the pod's supplementalGroupsPolicy;
// Merge (the runtime's default) when it sets none. A value the CRI does not
// know is an error with upstream's text.
func supplementalGroupsPolicy(psc *v1.PodSecurityContext) (runtimeapi.SupplementalGroupsPolicy, error) {
	if psc == nil || psc.SupplementalGroupsPolicy == nil {
		return runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
	if !ok {
		return 0, fmt.Errorf("unsupported supplementalGroupsPolicy: %s", *psc.SupplementalGroupsPolicy)
	}
	return runtimeapi.SupplementalGroupsPolicy(v), nil
}

// seccompProfile is the container's seccomp profile, as upstream chooses
// it: the container's field, else the pod's, else RuntimeDefault when the
// node defaults to it (Options.SeccompDefault) and Unconfined otherwise. A
// Localhost profile names a file under the profile root; one without a name,
// or whose name is absolute or climbs out with "..", is an error naming
// the field. The deprecated seccomp.security.alpha.kubernetes.io
// annotations are not read: they have had no effect since Kubernetes 1.27,
// and upstream's kubelet ignores them too.
func (b *Builder) seccompProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, error) {
	if csc := c.SecurityContext; csc != nil && csc.SeccompProfile != nil {
		return b.fieldSeccompProfile(csc.SeccompProfile, containerPath(pod, c).Child("securityContext", "seccompProfile"))
	}
	if psc := pod.Spec.SecurityContext; psc != nil && psc.SeccompProfile != nil {
		return b.fieldSeccompProfile(psc.SeccompProfile, field.NewPath("spec", "securityContext", "seccompProfile"))
	}
	if b.opts.SeccompDefault {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// fieldSeccompProfile translates one seccompProfile field; p is its path,
// for errors.
func (b *Builder) fieldSeccompProfile(sp *v1.SeccompProfile, p *field.Path) (*runtimeapi.SecurityProfile, error) {
	switch sp.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if sp.LocalhostProfile == nil || *sp.LocalhostProfile == "" {
			// Upstream's text, period included.
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost.")
		}
		name := *sp.LocalhostProfile
		if err := localDescendingPath(name, p.Child("localhostProfile")); err != nil {
			return nil, err
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(b.opts.SeccompProfileRoot, name)}, nil
	case v1.SeccompProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	// The API server admits no other type; a static pod's is refused by
	// its source. Anything else is refused here rather than run
	// unconfined.
	return nil, field.NotSupported(p.Child("type"), sp.Type, []v1.SeccompProfileType{
		v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined})
}

// localDescendingPath refuses, with the API server's error, a path that is
// absolute or has a ".." element: one that could leave the directory it is
// resolved in.
func localDescendingPath(p string, fp *field.Path) error {
	if path.IsAbs(p) || filepath.IsAbs(p) {
		return field.Invalid(fp, p, "must be a relative path")
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return field.Invalid(fp, p, "must not contain '..'")
		}
	}
	return nil
}

// containerPath is the field path of a container of the pod, found by
// name: spec.containers[i], spec.initContainers[i] or
// spec.ephemeralContainers[i].
func containerPath(pod *v1.Pod, c *v1.Container) *field.Path {
	spec := field.NewPath("spec")
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return spec.Child("initContainers").Index(i)
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == c.Name {
			return spec.Child("containers").Index(i)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == c.Name {
			return spec.Child("ephemeralContainers").Index(i)
		}
	}
	return spec.Child("containers").Key(c.Name)
}

// appArmorProfile translates the container's AppArmor profile for the
// runtime, both as a SecurityProfile and in the deprecated string form
// that older runtimes read ("runtime/default", "unconfined",
// "localhost/<name>"); nil and "" when the pod names none.
func appArmorProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, string, error) {
	p := podspec.AppArmorProfile(pod, c)
	if p == nil {
		return nil, "", nil
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			v1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			v1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile},
			v1.DeprecatedAppArmorBetaProfileNamePrefix + *p.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown apparmor profile type: %q", p.Type)
}

// namespaceOptions are the pod's namespaces, for its sandbox and each of
// its containers: the network, PID and IPC namespaces (the PID namespace
// is the container's own unless the pod shares one or uses the host's),
// and its user namespace (userNamespace).
func (b *Builder) namespaceOptions(pod *v1.Pod) (*runtimeapi.NamespaceOption, error) {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	userns, err := b.userNamespace(pod)
	if err != nil {
		return nil, err
	}
	ns.UsernsOptions = userns
	return ns, nil
}

// containerSecurityContext builds the CRI security context of a container,
// as upstream's kuberuntime does: the effective security context (the
// container's over the pod's), the seccomp and AppArmor profiles, SELinux
// options, the fsGroup and supplemental groups with their policy, the
// namespaces, no_new_privs when allowPrivilegeEscalation is false, and the
// masked and read-only paths of /proc (none for procMount Unmasked).
func (b *Builder) containerSecurityContext(pod *v1.Pod, c *v1.Container) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := effectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{SelinuxOptions: selinuxOption(eff.SELinuxOptions)}
	if eff.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	if eff.Privileged != nil {
		sc.Privileged = *eff.Privileged
	}
	if eff.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *eff.ReadOnlyRootFilesystem
	}
	if caps := eff.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{
			AddCapabilities:  make([]string, 0, len(caps.Add)),
			DropCapabilities: make([]string, 0, len(caps.Drop)),
		}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	var err error
	if sc.Seccomp, err = b.seccompProfile(pod, c); err != nil {
		return nil, err
	}
	if sc.Apparmor, sc.ApparmorProfile, err = appArmorProfile(pod, c); err != nil {
		return nil, err
	}
	if sc.NamespaceOptions, err = b.namespaceOptions(pod); err != nil {
		return nil, err
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		// The fsGroup is a supplemental group, first, as upstream's.
		if psc.FSGroup != nil {
			sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
		}
		sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
	}
	if sc.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(pod.Spec.SecurityContext); err != nil {
		return nil, err
	}
	sc.NoNewPrivs = eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation
	// The runtime masks nothing on its own: the lists come from here, as
	// upstream sends them.
	sc.MaskedPaths, sc.ReadonlyPaths = procPaths(eff.ProcMount)
	return sc, nil
}

// sandboxSecurityContext builds the CRI security context of the pod's
// sandbox, as upstream's: the pod's users, groups (fsGroup first) and
// their policy, SELinux options and namespaces; privileged when any
// container is; and the RuntimeDefault seccomp profile whatever the pod
// asks, so that the pause process is confined even where the containers
// are not.
func (b *Builder) sandboxSecurityContext(pod *v1.Pod) (*runtimeapi.LinuxSandboxSecurityContext, error) {
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		Privileged: hasPrivilegedContainer(pod),
		Seccomp:    &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	var err error
	if sc.NamespaceOptions, err = b.namespaceOptions(pod); err != nil {
		return nil, err
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc, nil
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
	}
	if psc.FSGroup != nil {
		sc.SupplementalGroups = append(sc.SupplementalGroups, *psc.FSGroup)
	}
	sc.SupplementalGroups = append(sc.SupplementalGroups, psc.SupplementalGroups...)
	if sc.SupplementalGroupsPolicy, err = supplementalGroupsPolicy(psc); err != nil {
		return nil, err
	}
	sc.SelinuxOptions = selinuxOption(psc.SELinuxOptions)
	return sc, nil
}
