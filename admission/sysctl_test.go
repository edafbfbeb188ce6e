package admission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/admission"
)

func TestSysctls(t *testing.T) {
	w, err := admission.NewSysctls([]string{"kernel.msg*", "net.core.somaxconn"})
	require.NoError(t, err)
	pod := func(hostNet, hostIPC bool, names ...string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &v1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		message string // "" means admitted
	}{
		{name: "no sysctl", pod: &v1.Pod{}},
		{name: "safe", pod: pod(false, false, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range")},
		{name: "safe, with slashes", pod: pod(false, false, "kernel/shm_rmid_forced")},
		{name: "unsafe, not allowed", pod: pod(false, false, "kernel.shm_rmid_forced", "kernel.sem"),
			message: `forbidden sysctl: "kernel.sem" not allowlisted`},
		{name: "unsafe, allowed by prefix", pod: pod(false, false, "kernel.msgmax")},
		{name: "unsafe, allowed by name", pod: pod(false, false, "net.core.somaxconn")},
		{name: "net sysctl on the host's network", pod: pod(true, false, "net.ipv4.ip_local_port_range"),
			message: `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{name: "ipc sysctl in the host's IPC namespace", pod: pod(false, true, "kernel.shm_rmid_forced"),
			message: `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := w.Admit(tc.pod, nil)
			assert.Equal(t, tc.message == "", ok)
			if tc.message != "" {
				assert.Equal(t, admission.ReasonSysctlForbidden, reason)
				assert.Equal(t, tc.message, msg)
			}
		})
	}
	_, err = admission.NewSysctls([]string{"vm.swappiness"})
	assert.ErrorContains(t, err, `"vm.swappiness": not known to be namespaced`)
	assert.ErrorIs(t, err, admission.ErrInvalidSysctl)
}
