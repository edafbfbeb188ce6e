package validation

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// containerContext is what checking a container needs of its pod.
type containerContext struct {
	volumes map[string]v1.VolumeSource // the pod's valid volumes, by name
	grace   *int64                     // spec.terminationGracePeriodSeconds
	os      *v1.PodOS
	// hostUsers: the pod runs in the host's user namespace (hostUsers
	// unset or true).
	hostUsers bool
}

// validateContainers checks the regular containers: at least one, names
// unique among them, each one's fields, and host ports unique across them.
func (c containerContext) validateContainers(cs []v1.Container, p *field.Path) field.ErrorList {
	if len(cs) == 0 {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range cs {
		ctr, cp := &cs[i], p.Index(i)
		errs = append(errs, c.validateCommon(ctr, cp)...)
		if names[ctr.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), ctr.Name))
		}
		names[ctr.Name] = true
		errs = append(errs, c.validateHandlersAndProbes(ctr, cp)...)
		errs = append(errs, validateContainerRestartPolicy(ctr.RestartPolicy, ctr.RestartPolicyRules, cp)...)
	}
	return append(errs, hostPortConflicts(cs, p)...)
}

// validateInitContainers checks the init containers: names unique among
// them and the regular containers, each one's fields, host ports unique
// within each (they run one at a time), and lifecycle handlers and probes
// only for a sidecar (restartPolicy Always).
func (c containerContext) validateInitContainers(cs, regular []v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for _, r := range regular {
		names[r.Name] = true
	}
	for i := range cs {
		ctr, cp := &cs[i], p.Index(i)
		errs = append(errs, c.validateCommon(ctr, cp)...)
		errs = append(errs, validateInitContainerRestartPolicy(ctr.RestartPolicy, ctr.RestartPolicyRules, cp)...)
		if names[ctr.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), ctr.Name))
		} else if ctr.Name != "" {
			names[ctr.Name] = true
		}
		errs = append(errs, hostPortConflicts(cs[i:i+1], p)...)
		if podspec.IsSidecar(ctr) {
			errs = append(errs, c.validateHandlersAndProbes(ctr, cp)...)
			continue
		}
		const notSidecar = "may not be set for init containers without restartPolicy=Always"
		if ctr.Lifecycle != nil {
			errs = append(errs, field.Forbidden(cp.Child("lifecycle"), notSidecar))
		}
		if ctr.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(cp.Child("livenessProbe"), notSidecar))
		}
		if ctr.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(cp.Child("readinessProbe"), notSidecar))
		}
		if ctr.StartupProbe != nil {
			errs = append(errs, field.Forbidden(cp.Child("startupProbe"), notSidecar))
		}
	}
	return errs
}

// validateCommon checks what every container has: name, image, termination
// message policy, ports, env, envFrom, volume mounts and devices, pull
// policy, resources and security context.
func (c containerContext) validateCommon(ctr *v1.Container, p *field.Path) field.ErrorList {
	errs := required(ctr.Name, p.Child("name"), dns1123Label)
	if ctr.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, oneOf(ctr.TerminationMessagePolicy, p.Child("terminationMessagePolicy"),
		v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError)...)
	errs = append(errs, validatePorts(ctr.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(ctr.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(ctr.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, c.validateVolumeMounts(ctr, p.Child("volumeMounts"))...)
	errs = append(errs, c.validateVolumeDevices(ctr, p.Child("volumeDevices"))...)
	errs = append(errs, oneOf(ctr.ImagePullPolicy, p.Child("imagePullPolicy"), v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)...)
	errs = append(errs, validateResources(&ctr.Resources, containerResourceName, p.Child("resources"))...)
	return append(errs, validateSecurityContext(ctr.SecurityContext, c.hostUsers, p.Child("securityContext"))...)
}

// validateHandlersAndProbes checks the lifecycle handlers and the probes of
// a container that may have them.
func (c containerContext) validateHandlersAndProbes(ctr *v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l := ctr.Lifecycle; l != nil {
		lp := p.Child("lifecycle")
		if l.PostStart != nil {
			errs = append(errs, c.validateHandler(handlerOfLifecycle(l.PostStart), lp.Child("postStart"))...)
		}
		if l.PreStop != nil {
			errs = append(errs, c.validateHandler(handlerOfLifecycle(l.PreStop), lp.Child("preStop"))...)
		}
		if l.StopSignal != nil {
			errs = append(errs, validateStopSignal(*l.StopSignal, lp.Child("stopSignal"), c.os)...)
		}
	}
	if pr := ctr.LivenessProbe; pr != nil {
		pp := p.Child("livenessProbe")
		errs = append(errs, c.validateProbe(pr, pp)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(pp.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	if pr := ctr.ReadinessProbe; pr != nil {
		pp := p.Child("readinessProbe")
		errs = append(errs, c.validateProbe(pr, pp)...)
		if pr.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(pp.Child("terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := ctr.StartupProbe; pr != nil {
		pp := p.Child("startupProbe")
		errs = append(errs, c.validateProbe(pr, pp)...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(pp.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

// validateProbe requires one valid handler and non-negative numbers (zero
// is defaulted, so in effect positive ones), and a positive probe-level
// terminationGracePeriodSeconds.
func (c containerContext) validateProbe(pr *v1.Probe, p *field.Path) field.ErrorList {
	errs := c.validateHandler(handler{exec: pr.Exec, httpGet: pr.HTTPGet, tcpSocket: pr.TCPSocket, grpc: pr.GRPC}, p)
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds},
		{"timeoutSeconds", pr.TimeoutSeconds},
		{"periodSeconds", pr.PeriodSeconds},
		{"successThreshold", pr.SuccessThreshold},
		{"failureThreshold", pr.FailureThreshold},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.value), p.Child(f.name))...)
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// handler is a probe's or a lifecycle hook's action: exactly one is set.
type handler struct {
	exec      *v1.ExecAction
	httpGet   *v1.HTTPGetAction
	tcpSocket *v1.TCPSocketAction
	grpc      *v1.GRPCAction
	sleep     *v1.SleepAction
}

func handlerOfLifecycle(h *v1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

// validateHandler requires exactly one action (a second is forbidden, none
// is required) and checks it: a command, an HTTP path, port, scheme and
// header names, a port, a sleep within the grace period.
func (c containerContext) validateHandler(h handler, p *field.Path) field.ErrorList {
	u := union{path: p, kind: "handler type"}
	if u.member(h.exec != nil, "exec") && len(h.exec.Command) == 0 {
		u.errs = append(u.errs, field.Required(p.Child("exec", "command"), ""))
	}
	if u.member(h.httpGet != nil, "httpGet") {
		hp := p.Child("httpGet")
		if h.httpGet.Path == "" {
			u.errs = append(u.errs, field.Required(hp.Child("path"), ""))
		}
		u.errs = append(u.errs, validatePortNumOrName(h.httpGet.Port, hp.Child("port"))...)
		if h.httpGet.Scheme != v1.URISchemeHTTP && h.httpGet.Scheme != v1.URISchemeHTTPS {
			u.errs = append(u.errs, field.NotSupported(hp.Child("scheme"), h.httpGet.Scheme, []v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}))
		}
		for _, hdr := range h.httpGet.HTTPHeaders {
			u.errs = append(u.errs, invalid(hp.Child("httpHeaders"), hdr.Name, validation.IsHTTPHeaderName(hdr.Name))...)
		}
	}
	if u.member(h.tcpSocket != nil, "tcpSocket") {
		u.errs = append(u.errs, validatePortNumOrName(h.tcpSocket.Port, p.Child("tcpSocket", "port"))...)
	}
	if u.member(h.grpc != nil, "grpc") {
		u.errs = append(u.errs, validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("grpc", "port"))...)
	}
	if u.member(h.sleep != nil, "sleep") && c.grace != nil {
		// Zero allowed: PodLifecycleSleepActionAllowZero, locked on since
		// 1.34.
		if s := h.sleep.Seconds; s < 0 || s > *c.grace {
			u.errs = append(u.errs, field.Invalid(p.Child("sleep"), s,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *c.grace)))
		}
	}
	return u.done()
}

// validatePortNumOrName checks a port given by number (1-65535) or by name
// (an IANA service name).
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	switch port.Type {
	case intstr.Int:
		return invalid(p, port.IntValue(), validation.IsValidPortNum(port.IntValue()))
	case intstr.String:
		return invalid(p, port.StrVal, validation.IsValidPortName(port.StrVal))
	}
	return field.ErrorList{field.InternalError(p, fmt.Errorf("unknown type: %v", port.Type))}
}

// linuxStopSignals are the signals a Linux container may be stopped with.
var linuxStopSignals = func() []v1.Signal {
	s := []v1.Signal{
		v1.SIGABRT, v1.SIGALRM, v1.SIGBUS, v1.SIGCHLD, v1.SIGCLD, v1.SIGCONT, v1.SIGFPE, v1.SIGHUP,
		v1.SIGILL, v1.SIGINT, v1.SIGIO, v1.SIGIOT, v1.SIGKILL, v1.SIGPIPE, v1.SIGPOLL, v1.SIGPROF,
		v1.SIGPWR, v1.SIGQUIT, v1.SIGSEGV, v1.SIGSTKFLT, v1.SIGSTOP, v1.SIGSYS, v1.SIGTERM, v1.SIGTRAP,
		v1.SIGTSTP, v1.SIGTTIN, v1.SIGTTOU, v1.SIGURG, v1.SIGUSR1, v1.SIGUSR2, v1.SIGVTALRM, v1.SIGWINCH,
		v1.SIGXCPU, v1.SIGXFSZ, v1.SIGRTMIN, v1.SIGRTMINPLUS1, v1.SIGRTMINPLUS2, v1.SIGRTMINPLUS3,
		v1.SIGRTMINPLUS4, v1.SIGRTMINPLUS5, v1.SIGRTMINPLUS6, v1.SIGRTMINPLUS7, v1.SIGRTMINPLUS8,
		v1.SIGRTMINPLUS9, v1.SIGRTMINPLUS10, v1.SIGRTMINPLUS11, v1.SIGRTMINPLUS12, v1.SIGRTMINPLUS13,
		v1.SIGRTMINPLUS14, v1.SIGRTMINPLUS15, v1.SIGRTMAXMINUS14, v1.SIGRTMAXMINUS13, v1.SIGRTMAXMINUS12,
		v1.SIGRTMAXMINUS11, v1.SIGRTMAXMINUS10, v1.SIGRTMAXMINUS9, v1.SIGRTMAXMINUS8, v1.SIGRTMAXMINUS7,
		v1.SIGRTMAXMINUS6, v1.SIGRTMAXMINUS5, v1.SIGRTMAXMINUS4, v1.SIGRTMAXMINUS3, v1.SIGRTMAXMINUS2,
		v1.SIGRTMAXMINUS1, v1.SIGRTMAX,
	}
	slices.Sort(s)
	return s
}()

// validateStopSignal requires spec.os.name and a signal of that OS.
func validateStopSignal(sig v1.Signal, p *field.Path, os *v1.PodOS) field.ErrorList {
	switch {
	case os == nil:
		return field.ErrorList{field.Forbidden(p, "may not be set for containers with empty `spec.os.name`")}
	case os.Name == v1.Windows && sig != v1.SIGKILL && sig != v1.SIGTERM:
		return field.ErrorList{field.NotSupported(p, sig, []v1.Signal{v1.SIGKILL, v1.SIGTERM})}
	case os.Name == v1.Linux && !slices.Contains(linuxStopSignals, sig):
		return field.ErrorList{field.NotSupported(p, sig, linuxStopSignals)}
	}
	return nil
}

// validateInitContainerRestartPolicy checks an init container's
// restartPolicy and rules (container restart rules and RestartAllContainers
// are on by default in 1.36).
func validateInitContainerRestartPolicy(rp *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, p *field.Path) field.ErrorList {
	if rp == nil {
		if len(rules) > 0 {
			return field.ErrorList{field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used")}
		}
		return nil
	}
	return validateContainerRestartPolicy(rp, rules, p)
}

// validateContainerRestartPolicy checks a container's restartPolicy (Always,
// Never, OnFailure) and its rules: at most 20, each with a known action and
// exit codes with a known operator and at most 255 values.
func validateContainerRestartPolicy(rp *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rpp := p.Child("restartPolicy")
	switch {
	case rp == nil && len(rules) == 0:
		return nil
	case rp == nil:
		errs = append(errs, field.Required(rpp, "must specify restartPolicy when restart rules are used"))
	case *rp != v1.ContainerRestartPolicyAlways && *rp != v1.ContainerRestartPolicyNever && *rp != v1.ContainerRestartPolicyOnFailure:
		errs = append(errs, field.NotSupported(rpp, *rp, []v1.ContainerRestartPolicy{
			v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure}))
	}
	if len(rules) > 20 {
		errs = append(errs, field.TooMany(p.Child("restartPolicyRules"), len(rules), 20))
	}
	for i, r := range rules {
		rp := p.Child("restartPolicyRules").Index(i)
		if r.Action != v1.ContainerRestartRuleActionRestart && r.Action != v1.ContainerRestartRuleActionRestartAllContainers {
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, []v1.ContainerRestartRuleAction{
				v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers}))
		}
		if r.ExitCodes == nil {
			errs = append(errs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		ep := rp.Child("exitCodes")
		if op := r.ExitCodes.Operator; op != v1.ContainerRestartRuleOnExitCodesOpIn && op != v1.ContainerRestartRuleOnExitCodesOpNotIn {
			errs = append(errs, field.NotSupported(ep.Child("operator"), op, []v1.ContainerRestartRuleOnExitCodesOperator{
				v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn}))
		}
		if len(r.ExitCodes.Values) > 255 {
			errs = append(errs, field.TooMany(ep.Child("values"), len(r.ExitCodes.Values), 255))
		}
	}
	return errs
}

// validatePorts checks a container's ports: names (IANA service names)
// unique, containerPort required and hostPort in 1-65535, a known protocol.
func validatePorts(ports []v1.ContainerPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		pp := p.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, invalid(pp.Child("name"), port.Name, msgs)...)
			} else if names[port.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			} else {
				names[port.Name] = true
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(pp.Child("containerPort"), ""))
		} else {
			errs = append(errs, invalid(pp.Child("containerPort"), port.ContainerPort, validation.IsValidPortNum(int(port.ContainerPort)))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, invalid(pp.Child("hostPort"), port.HostPort, validation.IsValidPortNum(int(port.HostPort)))...)
		}
		errs = append(errs, oneOf(port.Protocol, pp.Child("protocol"), v1.ProtocolSCTP, v1.ProtocolTCP, v1.ProtocolUDP)...)
	}
	return errs
}

// hostPortConflicts refuses two ports of cs with the same protocol, host IP
// and host port.
func hostPortConflicts(cs []v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, c := range cs {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen[key] {
				errs = append(errs, field.Duplicate(p.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return errs
}

// validateSecurityContext checks a container's user and group IDs, its
// /proc mount type (Unmasked only in a user namespace of the pod's own),
// its seccomp and AppArmor profiles, and the combinations
// of allowPrivilegeEscalation false that the runtime cannot honour.
func validateSecurityContext(sc *v1.SecurityContext, hostUsers bool, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		errs = append(errs, invalid(p.Child("runAsUser"), *sc.RunAsUser, validation.IsValidUserID(*sc.RunAsUser))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, invalid(p.Child("runAsGroup"), *sc.RunAsGroup, validation.IsValidGroupID(*sc.RunAsGroup))...)
	}
	if sc.ProcMount != nil {
		switch *sc.ProcMount {
		case v1.DefaultProcMount, v1.UnmaskedProcMount:
		default:
			errs = append(errs, field.NotSupported(p.Child("procMount"), *sc.ProcMount, []v1.ProcMountType{v1.DefaultProcMount, v1.UnmaskedProcMount}))
		}
		if hostUsers && *sc.ProcMount == v1.UnmaskedProcMount {
			// An unmasked /proc is safe only in a user namespace of the
			// pod's own.
			errs = append(errs, field.Invalid(p.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil && slices.Contains(sc.Capabilities.Add, "CAP_SYS_ADMIN") {
			errs = append(errs, field.Invalid(p, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
		}
	}
	return append(errs, validateAppArmorProfile(sc.AppArmorProfile, p.Child("appArmorProfile"))...)
}

// The downward API's fields, by where they are used.
var (
	envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
		"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}
	volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name",
		"metadata.namespace", "metadata.uid"}
	resourceFieldPaths = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory",
		"requests.cpu", "requests.ephemeral-storage", "requests.memory"}
)

// validateEnv checks env vars: names (any printable ASCII but "=", upstream's
// relaxed rule, locked on since 1.34) and their valueFrom.
func validateEnv(vars []v1.EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		ep := p.Index(i)
		errs = append(errs, required(ev.Name, ep.Child("name"), envVarName)...)
		errs = append(errs, validateEnvValueFrom(ev, ep.Child("valueFrom"))...)
	}
	return errs
}

// envVarName checks an environment variable's name: printable ASCII but
// "=" (upstream's relaxed rule, locked on since 1.34).
func envVarName(name string, p *field.Path) field.ErrorList {
	return invalid(p, name, validation.IsRelaxedEnvVarName(name))
}

// validateEnvValueFrom requires one source, and no value beside it, and
// checks it.
func validateEnvValueFrom(ev v1.EnvVar, p *field.Path) field.ErrorList {
	vf := ev.ValueFrom
	if vf == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if vf.FieldRef != nil {
		n++
		errs = append(errs, validateObjectFieldSelector(vf.FieldRef, envFieldPaths, p.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateResourceFieldSelector(vf.ResourceFieldRef, false, p.Child("resourceFieldRef"))...)
	}
	if vf.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, p.Child("configMapKeyRef"))...)
	}
	if vf.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, p.Child("secretKeyRef"))...)
	}
	if fk := vf.FileKeyRef; fk != nil {
		n++
		fp := p.Child("fileKeyRef")
		errs = append(errs, required(fk.Key, fp.Child("key"), envVarName)...)
		errs = append(errs, required(fk.VolumeName, fp.Child("volumeName"), dns1123Label)...)
		errs = append(errs, required(fk.Path, fp.Child("path"), validatePathNoBacksteps)...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(p, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateKeySelector checks a configMap's or secret's name and key.
func validateKeySelector(name, key string, p *field.Path) field.ErrorList {
	errs := invalid(p.Child("name"), name, apivalidation.NameIsDNSSubdomain(name, false))
	return append(errs, required(key, p.Child("key"), func(key string, p *field.Path) field.ErrorList {
		return invalid(p, key, validation.IsConfigMapKey(key))
	})...)
}

// validateObjectFieldSelector checks a downward API fieldRef: apiVersion v1
// and a field the API offers (labels and annotations by key too).
func validateObjectFieldSelector(fs *v1.ObjectFieldSelector, allowed []string, p *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(p.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(p.Child("fieldPath"), "")}
	}
	fieldPath, err := downwardFieldLabel(fs.APIVersion, fs.FieldPath)
	if err != nil {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: %v", err))}
	}
	if path, key, ok := splitSubscript(fieldPath); ok {
		switch path {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(key), p)
		case "metadata.labels":
			return qualifiedName(key, p)
		}
		return field.ErrorList{field.Invalid(p, path, "does not support subscript")}
	}
	if !slices.Contains(allowed, fieldPath) {
		return field.ErrorList{field.NotSupported(p.Child("fieldPath"), fieldPath, allowed)}
	}
	return nil
}

// downwardFieldLabel is the field a fieldRef names, as the API server reads
// it: only in v1, "spec.host" standing for "spec.nodeName".
func downwardFieldLabel(version, label string) (string, error) {
	if version != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", version)
	}
	if path, _, ok := splitSubscript(label); ok {
		if path == "metadata.annotations" || path == "metadata.labels" {
			return label, nil
		}
		return "", fmt.Errorf("field label does not support subscript: %s", label)
	}
	switch label {
	case "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return label, nil
	case "spec.host":
		return "spec.nodeName", nil
	}
	return "", fmt.Errorf("field label not supported: %s", label)
}

// splitSubscript splits "metadata.labels['app']" into "metadata.labels" and
// "app".
func splitSubscript(fieldPath string) (path, key string, ok bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return fieldPath, "", false
	}
	path, key, ok = strings.Cut(s, "['")
	if !ok || path == "" {
		return fieldPath, "", false
	}
	return path, key, true
}

// validateResourceFieldSelector checks a downward API resourceFieldRef: a
// container (in volumes), a resource the API offers and a divisor it
// supports.
func validateResourceFieldSelector(fs *v1.ResourceFieldSelector, volume bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(p.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(p.Child("resource"), ""))
	case !slices.Contains(resourceFieldPaths, fs.Resource) &&
		!strings.HasPrefix(fs.Resource, "limits.hugepages-") && !strings.HasPrefix(fs.Resource, "requests.hugepages-"):
		errs = append(errs, field.NotSupported(p.Child("resource"), fs.Resource, resourceFieldPaths))
	}
	return append(errs, validateDivisor(fs.Resource, fs.Divisor, p)...)
}

// validateDivisor checks a resourceFieldRef's divisor against its resource.
func validateDivisor(res string, divisor resource.Quantity, p *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	d := divisor.String()
	const bytes = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
	byteDivisor := slices.Contains(strings.Split(bytes, ", "), d)
	var errs field.ErrorList
	switch res {
	case "limits.cpu", "requests.cpu":
		if d != "1m" && d != "1" {
			errs = append(errs, field.Invalid(p.Child("divisor"), res, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !byteDivisor {
			errs = append(errs, field.Invalid(p.Child("divisor"), res, "only divisor's values "+bytes+" are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !byteDivisor {
			errs = append(errs, field.Invalid(p.Child("divisor"), res, "only divisor's values "+bytes+" are supported with the local ephemeral storage resource"))
		}
	}
	if (strings.HasPrefix(res, "requests.hugepages-") || strings.HasPrefix(res, "limits.hugepages-")) && !byteDivisor {
		errs = append(errs, field.Invalid(p.Child("divisor"), res, "only divisor's values "+bytes+" are supported with the hugepages resource"))
	}
	return errs
}

// validateEnvFrom checks envFrom sources: a prefix that is an env var name,
// one source each, named.
func validateEnvFrom(vars []v1.EnvFromSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		ep := p.Index(i)
		if ev.Prefix != "" {
			errs = append(errs, envVarName(ev.Prefix, ep.Child("prefix"))...)
		}
		n := 0
		named := func(name string, np *field.Path) {
			n++
			errs = append(errs, required(name, np.Child("name"), func(name string, p *field.Path) field.ErrorList {
				return invalid(p, name, apivalidation.NameIsDNSSubdomain(name, true))
			})...)
		}
		if ev.ConfigMapRef != nil {
			named(ev.ConfigMapRef.Name, ep.Child("configMapRef"))
		}
		if ev.SecretRef != nil {
			named(ev.SecretRef.Name, ep.Child("secretRef"))
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}
