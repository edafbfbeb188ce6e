package containerconfig_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

var (
	runtimeDefault = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	unconfined     = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
)

func localhost(ref string) *runtimeapi.SecurityProfile {
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}
}

// TestSeccompProfile pins upstream's choice of a container's seccomp
// profile: the container's field, else the pod's, else the node's default;
// Localhost profiles under the profile root, never outside it.
func TestSeccompProfile(t *testing.T) {
	field := func(typ v1.SeccompProfileType, name ...string) *v1.SeccompProfile {
		p := &v1.SeccompProfile{Type: typ}
		if len(name) != 0 {
			p.LocalhostProfile = &name[0]
		}
		return p
	}
	for _, tc := range []struct {
		name          string
		pod, ctr      *v1.SeccompProfile
		annotations   map[string]string
		defaultOn     bool
		root          string
		want          *runtimeapi.SecurityProfile
		wantErr       string
		initContainer bool
	}{
		{name: "nothing said: unconfined, upstream's default", want: unconfined},
		{name: "nothing said, seccompDefault on", defaultOn: true, want: runtimeDefault},
		{name: "pod RuntimeDefault", pod: field(v1.SeccompProfileTypeRuntimeDefault), want: runtimeDefault},
		{name: "container RuntimeDefault", ctr: field(v1.SeccompProfileTypeRuntimeDefault), want: runtimeDefault},
		{name: "the container's field wins", pod: field(v1.SeccompProfileTypeRuntimeDefault), ctr: field(v1.SeccompProfileTypeUnconfined), want: unconfined},
		{name: "an explicit Unconfined beats seccompDefault", pod: field(v1.SeccompProfileTypeUnconfined), defaultOn: true, want: unconfined},
		{name: "Localhost under the default root", pod: field(v1.SeccompProfileTypeLocalhost, "profiles/audit.json"),
			want: localhost("/var/lib/kubelet/seccomp/profiles/audit.json")},
		{name: "Localhost under the configured root", ctr: field(v1.SeccompProfileTypeLocalhost, "deny.json"), root: "/srv/kubelet/seccomp",
			want: localhost("/srv/kubelet/seccomp/deny.json")},
		{name: "Localhost without a name", ctr: field(v1.SeccompProfileTypeLocalhost),
			wantErr: "localhostProfile must be set if seccompProfile type is Localhost."},
		{name: "Localhost with an empty name", ctr: field(v1.SeccompProfileTypeLocalhost, ""),
			wantErr: "localhostProfile must be set if seccompProfile type is Localhost."},
		{name: "Localhost climbing out of the root", ctr: field(v1.SeccompProfileTypeLocalhost, "../../../etc/evil.json"),
			wantErr: `spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "../../../etc/evil.json": must not contain '..'`},
		{name: "an init container's Localhost climbing out", ctr: field(v1.SeccompProfileTypeLocalhost, "a/../../b"), initContainer: true,
			wantErr: `spec.initContainers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "a/../../b": must not contain '..'`},
		{name: "the pod's Localhost, absolute", pod: field(v1.SeccompProfileTypeLocalhost, "/etc/evil.json"),
			wantErr: `spec.securityContext.seccompProfile.localhostProfile: Invalid value: "/etc/evil.json": must be a relative path`},
		{name: "an unknown type is refused, not run unconfined", pod: field("Strict"),
			wantErr: `spec.securityContext.seccompProfile.type: Unsupported value: "Strict": supported values: "Localhost", "RuntimeDefault", "Unconfined"`},
		{name: "the legacy pod annotation is ignored, as upstream since 1.27",
			annotations: map[string]string{v1.SeccompPodAnnotationKey: v1.SeccompProfileRuntimeDefault}, want: unconfined},
		{name: "the legacy container annotation is ignored",
			annotations: map[string]string{v1.SeccompContainerAnnotationKeyPrefix + "app": v1.SeccompProfileRuntimeDefault}, want: unconfined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBuilder(t, containerconfig.Options{SeccompDefault: tc.defaultOn, SeccompProfileRoot: tc.root})
			c := ctr("app")
			if tc.ctr != nil {
				c.SecurityContext = &v1.SecurityContext{SeccompProfile: tc.ctr}
			}
			pod := newPod("", nil, c)
			if tc.initContainer {
				pod = newPod("", []v1.Container{c}, ctr("main"))
			}
			pod.Annotations = tc.annotations
			if tc.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: tc.pod}
			}
			target := &pod.Spec.Containers[0]
			if tc.initContainer {
				target = &pod.Spec.InitContainers[0]
			}
			cfg, err := s.ContainerConfig(context.Background(), pod, target, cri.ContainerTypeRegular, 0, nil, "", nil)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.True(t, proto.Equal(tc.want, cfg.GetLinux().GetSecurityContext().GetSeccomp()),
				"got %v, want %v", cfg.GetLinux().GetSecurityContext().GetSeccomp(), tc.want)
			// The sandbox is RuntimeDefault whatever the pod asks.
			sb, err := s.SandboxConfig(pod, 0)
			require.NoError(t, err)
			assert.True(t, proto.Equal(runtimeDefault, sb.GetLinux().GetSecurityContext().GetSeccomp()))
		})
	}
}

// TestAppArmorProfile pins upstream's choice of a container's AppArmor
// profile (field, then annotation, then the pod's field) and both forms the
// runtime gets.
func TestAppArmorProfile(t *testing.T) {
	aa := func(typ v1.AppArmorProfileType, name ...string) *v1.AppArmorProfile {
		p := &v1.AppArmorProfile{Type: typ}
		if len(name) != 0 {
			p.LocalhostProfile = &name[0]
		}
		return p
	}
	const key = v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "app"
	for _, tc := range []struct {
		name        string
		pod, ctr    *v1.AppArmorProfile
		annotation  string
		want        *runtimeapi.SecurityProfile
		wantLegacy  string
		wantErr     string
		annotations bool
	}{
		{name: "none: the runtime's default, nothing sent"},
		{name: "pod RuntimeDefault", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), want: runtimeDefault, wantLegacy: "runtime/default"},
		{name: "container Unconfined over the pod's", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), ctr: aa(v1.AppArmorProfileTypeUnconfined),
			want: unconfined, wantLegacy: "unconfined"},
		{name: "container Localhost", ctr: aa(v1.AppArmorProfileTypeLocalhost, "k8s-deny-write"),
			want: localhost("k8s-deny-write"), wantLegacy: "localhost/k8s-deny-write"},
		{name: "the annotation over the pod's field", pod: aa(v1.AppArmorProfileTypeUnconfined), annotations: true, annotation: "localhost/k8s-audit",
			want: localhost("k8s-audit"), wantLegacy: "localhost/k8s-audit"},
		{name: "the container's field over the annotation", ctr: aa(v1.AppArmorProfileTypeRuntimeDefault), annotations: true, annotation: "unconfined",
			want: runtimeDefault, wantLegacy: "runtime/default"},
		{name: "an annotation runtime/default", annotations: true, annotation: "runtime/default", want: runtimeDefault, wantLegacy: "runtime/default"},
		{name: "an invalid annotation is ignored", pod: aa(v1.AppArmorProfileTypeRuntimeDefault), annotations: true, annotation: "bogus",
			want: runtimeDefault, wantLegacy: "runtime/default"},
		{name: "Localhost without a name", ctr: aa(v1.AppArmorProfileTypeLocalhost), wantErr: "missing localhost apparmor profile name"},
		{name: "an unknown type", ctr: aa("Strict"), wantErr: `unknown apparmor profile type: "Strict"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBuilder(t, containerconfig.Options{})
			c := ctr("app")
			if tc.ctr != nil {
				c.SecurityContext = &v1.SecurityContext{AppArmorProfile: tc.ctr}
			}
			pod := newPod("", nil, c)
			if tc.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: tc.pod}
			}
			if tc.annotations {
				pod.Annotations = map[string]string{key: tc.annotation}
			}
			cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			sc := cfg.GetLinux().GetSecurityContext()
			assert.True(t, proto.Equal(tc.want, sc.GetApparmor()), "got %v, want %v", sc.GetApparmor(), tc.want)
			assert.Equal(t, tc.wantLegacy, sc.GetApparmorProfile())
		})
	}
}

// TestSecurityContextFields pins the rest of the container's and the
// sandbox's CRI security context against upstream's kuberuntime: the
// container's fields over the pod's, SELinux, groups and their policy,
// no_new_privs, capabilities, the /proc paths, the user namespace mode.
func TestSecurityContextFields(t *testing.T) {
	s := newBuilder(t, containerconfig.Options{})
	strict := v1.SupplementalGroupsPolicyStrict
	unmasked := v1.UnmaskedProcMount
	c := ctr("app")
	c.SecurityContext = &v1.SecurityContext{
		RunAsUser: ptr[int64](1001), RunAsNonRoot: ptr(true), ReadOnlyRootFilesystem: ptr(true), AllowPrivilegeEscalation: ptr(false),
		SELinuxOptions: &v1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"},
		Capabilities:   &v1.Capabilities{Drop: []v1.Capability{"ALL"}, Add: []v1.Capability{"NET_BIND_SERVICE"}},
		ProcMount:      &unmasked,
	}
	pod := newPod("", nil, c, ctr("plain"))
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: ptr[int64](1000), RunAsGroup: ptr[int64](3000), FSGroup: ptr[int64](2000), SupplementalGroups: []int64{4000},
		SupplementalGroupsPolicy: &strict, SELinuxOptions: &v1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0"},
	}
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.NoError(t, err)
	sc := cfg.GetLinux().GetSecurityContext()
	assert.Equal(t, int64(1001), sc.GetRunAsUser().GetValue(), "the container's runAsUser")
	assert.Equal(t, int64(3000), sc.GetRunAsGroup().GetValue(), "the pod's runAsGroup")
	assert.True(t, sc.GetReadonlyRootfs())
	assert.True(t, sc.GetNoNewPrivs(), "allowPrivilegeEscalation: false")
	assert.False(t, sc.GetPrivileged())
	assert.Equal(t, []string{"NET_BIND_SERVICE"}, sc.GetCapabilities().GetAddCapabilities())
	assert.Equal(t, []string{"ALL"}, sc.GetCapabilities().GetDropCapabilities())
	assert.True(t, proto.Equal(&runtimeapi.SELinuxOption{Type: "container_t", Level: "s0:c1,c2"}, sc.GetSelinuxOptions()),
		"the container's SELinux options replace the pod's whole")
	assert.Equal(t, []int64{2000, 4000}, sc.GetSupplementalGroups())
	assert.Equal(t, runtimeapi.SupplementalGroupsPolicy_Strict, sc.GetSupplementalGroupsPolicy())
	assert.Empty(t, sc.GetMaskedPaths())
	assert.Empty(t, sc.GetReadonlyPaths())
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, sc.GetNamespaceOptions().GetUsernsOptions().GetMode(), "the node's user namespace")

	plain, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[1], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.NoError(t, err)
	psc := plain.GetLinux().GetSecurityContext()
	assert.Equal(t, int64(1000), psc.GetRunAsUser().GetValue(), "the pod's runAsUser")
	assert.False(t, psc.GetNoNewPrivs(), "allowPrivilegeEscalation unset")
	assert.Nil(t, psc.GetCapabilities(), "no capabilities said: the runtime's defaults")
	assert.True(t, proto.Equal(&runtimeapi.SELinuxOption{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0"}, psc.GetSelinuxOptions()))
	assert.Contains(t, psc.GetMaskedPaths(), "/proc/kcore")
	assert.Contains(t, psc.GetReadonlyPaths(), "/proc/sys")

	sb, err := s.SandboxConfig(pod, 0)
	require.NoError(t, err)
	ssc := sb.GetLinux().GetSecurityContext()
	assert.Equal(t, int64(1000), ssc.GetRunAsUser().GetValue())
	assert.Equal(t, int64(3000), ssc.GetRunAsGroup().GetValue())
	assert.Equal(t, []int64{2000, 4000}, ssc.GetSupplementalGroups())
	assert.Equal(t, runtimeapi.SupplementalGroupsPolicy_Strict, ssc.GetSupplementalGroupsPolicy())
	assert.True(t, proto.Equal(&runtimeapi.SELinuxOption{User: "system_u", Role: "system_r", Type: "spc_t", Level: "s0"}, ssc.GetSelinuxOptions()))
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, ssc.GetNamespaceOptions().GetUsernsOptions().GetMode())

	bad := v1.SupplementalGroupsPolicy("Loose")
	pod.Spec.SecurityContext.SupplementalGroupsPolicy = &bad
	_, err = s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[1], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.EqualError(t, err, "unsupported supplementalGroupsPolicy: Loose")
	_, err = s.SandboxConfig(pod, 0)
	require.EqualError(t, err, "unsupported supplementalGroupsPolicy: Loose")
}

// TestUserNamespaces: hostUsers false gets a range of its own where the
// handler supports user namespaces, the same for sandbox and containers and
// after a restart; elsewhere the sandbox is refused with upstream's message.
func TestUserNamespaces(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a-file"), nil, 0o600), "a file beside the pod directories is no pod")
	supports := func(h string) bool { return h == "" || h == "crun" }
	s := newBuilder(t, containerconfig.Options{PodsDir: dir, UserNamespaces: supports})
	pod := newPod("", nil, ctr("app"))
	pod.Spec.HostUsers = ptr(false)
	sb, err := s.SandboxConfig(pod, 0)
	require.NoError(t, err)
	userns := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	require.Equal(t, runtimeapi.NamespaceMode_POD, userns.GetMode())
	require.Len(t, userns.GetUids(), 1)
	m := userns.GetUids()[0]
	assert.Zero(t, m.GetContainerId())
	assert.Equal(t, uint32(65536), m.GetLength())
	assert.Zero(t, m.GetHostId()%65536, "a multiple of 65536")
	assert.NotZero(t, m.GetHostId(), "never the host's first range")
	assert.True(t, proto.Equal(userns.GetUids()[0], userns.GetGids()[0]))

	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.NoError(t, err)
	assert.True(t, proto.Equal(userns, cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()),
		"the containers share the sandbox's mappings")

	// Recorded as upstream records it.
	b, err := os.ReadFile(filepath.Join(dir, "uid-1", "userns"))
	require.NoError(t, err)
	var rec map[string][]map[string]uint32
	require.NoError(t, json.Unmarshal(b, &rec))
	want := []map[string]uint32{{"hostId": m.GetHostId(), "containerId": 0, "length": 65536}}
	assert.Equal(t, map[string][]map[string]uint32{"uidMappings": want, "gidMappings": want}, rec)

	// A second pod gets another range; a new Builder (a restart) gives the
	// first pod its recorded one.
	other := newPod("", nil, ctr("app"))
	other.UID = "uid-2"
	other.Spec.HostUsers = ptr(false)
	sb2, err := s.SandboxConfig(other, 0)
	require.NoError(t, err)
	assert.NotEqual(t, m.GetHostId(), sb2.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetUids()[0].GetHostId())
	restarted := newBuilder(t, containerconfig.Options{PodsDir: dir, UserNamespaces: supports})
	again, err := restarted.SandboxConfig(pod, 1)
	require.NoError(t, err)
	assert.Equal(t, m.GetHostId(), again.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetUids()[0].GetHostId())

	// Forgetting the pod frees its range and its record.
	restarted.RemovePod(pod.UID)
	assert.NoFileExists(t, filepath.Join(dir, "uid-1", "userns"))

	// A handler without user namespaces: upstream's refusal, naming it.
	pod.Spec.RuntimeClassName = ptr("runc")
	_, err = s.SandboxConfig(pod, 0)
	require.EqualError(t, err, "can't set `spec.hostUsers: false`, RuntimeClass handler \"runc\" does not support user namespaces")
	none := newBuilder(t, containerconfig.Options{PodsDir: t.TempDir()})
	pod.Spec.RuntimeClassName = nil
	_, err = none.SandboxConfig(pod, 0)
	require.EqualError(t, err, "can't set `spec.hostUsers: false`, runtime does not support user namespaces")
	_, err = none.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.Error(t, err, "never a container in the host's user namespace")

	// A runtime class that does not exist is that error, before user
	// namespaces are considered, as upstream's.
	classes := containerconfig.RuntimeClassesFunc(func(name string) (*nodev1.RuntimeClass, error) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}, name)
	})
	withClasses := newBuilder(t, containerconfig.Options{PodsDir: t.TempDir(), UserNamespaces: supports, RuntimeClasses: classes})
	pod.Spec.RuntimeClassName = ptr("missing")
	_, err = withClasses.SandboxConfig(pod, 0)
	require.EqualError(t, err, `runtimeclasses.node.k8s.io "missing" not found`)
	pod.Spec.RuntimeClassName = nil

	// hostUsers true, or unset, is the node's user namespace.
	pod.Spec.HostUsers = ptr(true)
	sb, err = none.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetMode())
}

// TestUserNamespacesCorruptRecord: a record this package did not write
// stops allocation rather than risk handing out IDs in use.
func TestUserNamespacesCorruptRecord(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":        "{",
		"two mappings":    `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536},{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[]}`,
		"root not mapped": `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`,
		"host's own IDs":  `{"uidMappings":[{"hostId":0,"containerId":0,"length":65536}],"gidMappings":[{"hostId":0,"containerId":0,"length":65536}]}`,
		"odd length":      `{"uidMappings":[{"hostId":65536,"containerId":0,"length":1000}],"gidMappings":[{"hostId":65536,"containerId":0,"length":1000}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "old-pod"), 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "old-pod", "userns"), []byte(content), 0o600))
			s := newBuilder(t, containerconfig.Options{PodsDir: dir, UserNamespaces: func(string) bool { return true }})
			pod := newPod("", nil, ctr("app"))
			pod.Spec.HostUsers = ptr(false)
			_, err := s.SandboxConfig(pod, 0)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "old-pod")
		})
	}
}
