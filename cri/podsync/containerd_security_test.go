//go:build containerd

package podsync_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// TestContainerdSeccomp proves the seccomp profile reaches the container: a
// syscall containerd's default profile refuses to a container without
// CAP_SYS_ADMIN, unshare(2) (here creating a user namespace, which needs no
// capability), fails under the pod's RuntimeDefault and succeeds in a
// container of the same pod that asks for Unconfined, so the test can fail.
// A Localhost profile under the syncer's profile root that denies only
// unshare is applied too.
func TestContainerdSeccomp(t *testing.T) {
	h := newCtrdHarness(t)
	root := t.TempDir()
	profile := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["unshare"],"action":"SCMP_ACT_ERRNO"}]}`
	require.NoError(t, os.MkdirAll(filepath.Join(root, "profiles"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "profiles", "no-unshare.json"), []byte(profile), 0o644))
	var err error
	h.s, err = podsync.New(podsync.Options{Runtime: h.c, Clock: h.clk, Config: containerconfig.Options{LogRoot: t.TempDir(), PodsDir: h.pods, SeccompProfileRoot: root}})
	require.NoError(t, err)

	// Each prints unshare's complaint to its log and exits with its code.
	try := func(name string) v1.Container { return h.ctr(name, "sh", "-c", "unshare -U true") }
	confined := try("runtime-default")
	unconfined := try("unconfined")
	unconfined.SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}
	local := try("localhost")
	name := "profiles/no-unshare.json"
	local.SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}}
	p := h.pod(v1.RestartPolicyNever, nil, confined, unconfined, local)
	p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}

	require.NoError(t, h.sync(p).Err())
	assert.Equal(t, int32(0), h.waitExited(p, "unconfined", "0").GetExitCode(), "unconfined, unshare works: %s", h.log(p, "unconfined"))
	for _, c := range []string{"runtime-default", "localhost"} {
		st := h.waitExited(p, c, "0")
		assert.NotEqual(t, int32(0), st.GetExitCode(), "%s: unshare must be refused", c)
		assert.Contains(t, h.log(p, c), "Operation not permitted", c)
	}
}

// TestContainerdSecurityContextRefusals: what a node cannot honour never
// runs weaker. A Localhost profile outside the root is refused before the
// runtime is asked (CreateContainerConfigError naming the field); a pod
// with hostUsers: false on a runtime without user namespaces gets no
// sandbox (upstream's message).
func TestContainerdSecurityContextRefusals(t *testing.T) {
	t.Run("profile outside the root", func(t *testing.T) {
		h := newCtrdHarness(t)
		c := h.ctr("escape", "true")
		name := "../../etc/profile.json"
		c.SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}}
		p := h.pod(v1.RestartPolicyNever, nil, c)
		s := step(t, h.sync(p), "escape")
		require.ErrorIs(t, s.Err, podsync.ErrCreateContainerConfig)
		assert.Equal(t, `spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "../../etc/profile.json": must not contain '..'`, s.Message)
		assert.Empty(t, h.status(p).Containers)
	})
	t.Run("user namespace", func(t *testing.T) {
		h := newCtrdHarness(t)
		p := h.pod(v1.RestartPolicyNever, nil, h.ctr("app", "true"))
		no := false
		p.Spec.HostUsers = &no
		r := h.sync(p)
		require.ErrorIs(t, r.Err(), podsync.ErrCreatePodSandbox)
		assert.Equal(t, "can't set `spec.hostUsers: false`, runtime does not support user namespaces", r.Steps[0].Message)
		assert.Empty(t, h.status(p).Sandboxes)
	})
}

// log returns the newest log of the named container.
func (h *ctrdHarness) log(p *v1.Pod, name string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.status(p).ContainerByName(name).GetLogPath())
	require.NoError(h.t, err)
	return strings.TrimSpace(string(b))
}
