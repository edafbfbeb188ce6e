package admission

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// ReasonSysctlForbidden is the reason of a pod refused for a sysctl the node
// does not allow, upstream's.
const ReasonSysctlForbidden = "SysctlForbidden"

// ErrInvalidSysctl is wrapped by NewSysctls's error for an allowed unsafe
// sysctl the kernel does not namespace.
var ErrInvalidSysctl = errors.New("invalid allowed unsafe sysctl")

var _ Handler = (*Sysctls)(nil)

// sysctlNamespace is the kernel namespace a sysctl belongs to: a pod that
// shares it with the host cannot set the sysctl for itself alone.
type sysctlNamespace string

const (
	ipcNamespace sysctlNamespace = "IPC"
	netNamespace sysctlNamespace = "Net"
)

// safeSysctls are the sysctls every pod may set, upstream's list: namespaced
// by the kernel and without effect on other pods. (Upstream drops the later
// entries on kernels older than the one that namespaced them, 3.16 to 4.15.)
var safeSysctls = map[string]sysctlNamespace{
	"kernel.shm_rmid_forced":              ipcNamespace,
	"net.ipv4.ip_local_port_range":        netNamespace,
	"net.ipv4.tcp_syncookies":             netNamespace,
	"net.ipv4.ping_group_range":           netNamespace,
	"net.ipv4.ip_unprivileged_port_start": netNamespace,
	"net.ipv4.ip_local_reserved_ports":    netNamespace,
	"net.ipv4.tcp_keepalive_time":         netNamespace,
	"net.ipv4.tcp_fin_timeout":            netNamespace,
	"net.ipv4.tcp_keepalive_intvl":        netNamespace,
	"net.ipv4.tcp_keepalive_probes":       netNamespace,
	"net.ipv4.tcp_rmem":                   netNamespace,
	"net.ipv4.tcp_wmem":                   netNamespace,
}

// namespacedBy tells which kernel namespace isolates a sysctl, for the
// groups the kernel is known to namespace; "" when none is known.
func namespacedBy(name string) sysctlNamespace {
	switch {
	case strings.HasPrefix(name, "kernel.shm"), strings.HasPrefix(name, "kernel.msg"), name == "kernel.sem",
		strings.HasPrefix(name, "fs.mqueue."):
		return ipcNamespace
	case strings.HasPrefix(name, "net."):
		return netNamespace
	}
	return ""
}

// Sysctls is upstream's sysctl admission handler: it admits the sysctls a
// pod may set, the safe ones and the unsafe ones the node allows by name
// or by prefix ("kernel.msg*"), each only when the pod does not share the
// sysctl's kernel namespace with the host, and refuses every other pod
// with ReasonSysctlForbidden. It holds no state after NewSysctls and is
// safe for concurrent use.
type Sysctls struct {
	names    map[string]sysctlNamespace
	prefixes map[string]sysctlNamespace
}

// NewSysctls returns the handler of the safe sysctls and of the unsafe ones
// the node allows (upstream's allowedUnsafeSysctls), by name or by a prefix
// ending in "*", slashes or dots. A pattern the kernel is not known to
// namespace (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*, net.*) is
// an error wrapping ErrInvalidSysctl: allowing it would let a pod change
// the node.
func NewSysctls(allowedUnsafe []string) (*Sysctls, error) {
	w := &Sysctls{names: map[string]sysctlNamespace{}, prefixes: map[string]sysctlNamespace{}}
	for n, ns := range safeSysctls {
		w.names[n] = ns
	}
	for _, p := range allowedUnsafe {
		p = podspec.NormalizeSysctlName(p)
		prefix, wild := strings.CutSuffix(p, "*")
		ns := namespacedBy(prefix)
		if ns == "" {
			return nil, fmt.Errorf("allowed unsafe sysctl %q: not known to be namespaced by the kernel: %w", p, ErrInvalidSysctl)
		}
		if wild {
			w.prefixes[prefix] = ns
		} else {
			w.names[p] = ns
		}
	}
	return w, nil
}

// Admit refuses a pod that sets a sysctl the handler does not allow, or one
// of a namespace the pod shares with the host, with upstream's reason and
// message ("forbidden sysctl: \"kernel.sem\" not allowlisted").
func (w *Sysctls) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	if pod.Spec.SecurityContext == nil {
		return true, "", ""
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.check(podspec.NormalizeSysctlName(s.Name), pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return false, ReasonSysctlForbidden, "forbidden sysctl: " + err.Error()
		}
	}
	return true, "", ""
}

func (w *Sysctls) check(name string, hostNet, hostIPC bool) error {
	ns, found := w.names[name]
	if !found {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(name, p) {
				ns, found = pns, true
				break
			}
		}
	}
	if !found {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if (ns == ipcNamespace && hostIPC) || (ns == netNamespace && hostNet) {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}
