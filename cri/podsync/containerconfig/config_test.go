package containerconfig_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/internal/eventtest"
)

// nodeBuilder is a Builder of a node with a name, an address and cluster
// DNS, whose pods' volumes are at vols.
func nodeBuilder(t *testing.T, vols map[string]string) *containerconfig.Builder {
	t.Helper()
	return newBuilder(t, containerconfig.Options{LogRoot: "/logs", NodeName: "node-1", HostIPs: []string{"192.168.1.10"},
		ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local",
		Volumes: containerconfig.VolumeHostPathsFunc(func(*v1.Pod) (map[string]string, error) { return vols, nil })})
}

func TestContainerConfig(t *testing.T) {
	s := nodeBuilder(t, map[string]string{"data": "/var/lib/kubelet/pods/uid-1/volumes/data"})
	c := ctr("app")
	c.Args = []string{"-v"}
	c.WorkingDir = "/work"
	c.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("128Mi")},
	}
	c.Env = []v1.EnvVar{
		{Name: "PLAIN", Value: "x"},
		{Name: "NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "HOSTIP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
		{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
	}
	ro := v1.MountPropagationHostToContainer
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true, SubPath: "sub/dir", MountPropagation: &ro}}
	pod := newPod("", nil, c)
	pod.Labels = map[string]string{"app": "web"}
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 2, []string{"10.88.0.5"}, "sha256:abc", nil)
	require.NoError(t, err)
	env := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	assert.Equal(t, map[string]string{"PLAIN": "x", "NAME": "web", "NS": "default", "APP": "web", "NODE": "node-1",
		"IP": "10.88.0.5", "HOSTIP": "192.168.1.10", "CPU": "500", "MEM": "128"}, env)
	assert.Equal(t, "app/2.log", cfg.GetLogPath())
	assert.Equal(t, uint32(2), cfg.GetMetadata().GetAttempt())
	assert.Equal(t, "sha256:abc", cfg.GetImage().GetImage())
	assert.Equal(t, "2", cfg.GetAnnotations()[cri.ContainerRestartCountAnnotation])
	assert.Equal(t, containerconfig.FormatHash(containerconfig.HashContainer(&c)), cfg.GetAnnotations()[cri.ContainerHashAnnotation])
	assert.Equal(t, "app", cfg.GetLabels()[cri.ContainerNameLabel])
	assert.Equal(t, []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/var/lib/kubelet/pods/uid-1/volumes/data/sub/dir", Readonly: true,
		Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER}}, cfg.GetMounts())
	r := cfg.GetLinux().GetResources()
	assert.Equal(t, int64(256), r.GetCpuShares())
	assert.Equal(t, int64(50000), r.GetCpuQuota())
	assert.Equal(t, int64(100000), r.GetCpuPeriod())
	assert.Equal(t, int64(128<<20), r.GetMemoryLimitInBytes())
	assert.Equal(t, runtimeapi.NamespaceMode_CONTAINER, cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetPid())
}

// mountsVolumes is a volume manager that builds containers' mounts itself.
type mountsVolumes struct{ err error }

func (mountsVolumes) VolumeHostPaths(*v1.Pod) (map[string]string, error) {
	return map[string]string{"data": "/joined/by/the/builder"}, nil
}

func (m mountsVolumes) Mounts(_ *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	return []*runtimeapi.Mount{{ContainerPath: c.VolumeMounts[0].MountPath, HostPath: "/resolved/by/volumes", Readonly: true}}, m.err
}

func TestContainerConfigUsesTheVolumeManagersMounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		vols mountsVolumes
		want string
	}{
		{"mounts", mountsVolumes{}, ""},
		{"error", mountsVolumes{err: errors.New(`subPath "a/link" escapes the volume`)}, `container app: volumes: subPath "a/link" escapes the volume`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBuilder(t, containerconfig.Options{Volumes: tc.vols})
			c := ctr("app")
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "a/link"}}
			pod := newPod("", nil, c)
			cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "sha256:abc", nil)
			if tc.want != "" {
				require.EqualError(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/resolved/by/volumes", Readonly: true}}, cfg.GetMounts())
		})
	}
}

func TestContainerConfigRejects(t *testing.T) {
	s := nodeBuilder(t, map[string]string{"data": "/v/data"})
	for name, mount := range map[string]v1.VolumeMount{
		"subPath with ..":    {Name: "data", MountPath: "/d", SubPath: "../../etc"},
		"absolute subPath":   {Name: "data", MountPath: "/d", SubPath: "/etc"},
		"missing volume":     {Name: "nope", MountPath: "/d"},
		"relative mountPath": {Name: "data", MountPath: "d"},
	} {
		t.Run(name, func(t *testing.T) {
			c := ctr("app")
			c.VolumeMounts = []v1.VolumeMount{mount}
			pod := newPod("", nil, c)
			_, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
			assert.Error(t, err)
		})
	}
}

func TestSandboxConfig(t *testing.T) {
	s := nodeBuilder(t, nil)
	c := ctr("app")
	c.Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}
	pod := newPod("", nil, c)
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"note": "x"}
	cfg, err := s.SandboxConfig(pod, 3)
	require.NoError(t, err)
	assert.Equal(t, "web", cfg.GetHostname())
	assert.Equal(t, uint32(3), cfg.GetMetadata().GetAttempt())
	assert.Equal(t, "/logs/default_web_uid-1", cfg.GetLogDirectory())
	assert.Equal(t, "uid-1", cfg.GetLabels()[cri.PodUIDLabel])
	assert.Equal(t, "web", cfg.GetLabels()["app"])
	assert.Equal(t, "x", cfg.GetAnnotations()["note"])
	assert.Equal(t, []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080}}, cfg.GetPortMappings())
	assert.Equal(t, []string{"10.96.0.10"}, cfg.GetDnsConfig().GetServers())
	assert.Equal(t, []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, cfg.GetDnsConfig().GetSearches())

	pod.Spec.HostNetwork = true
	cfg, err = s.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Empty(t, cfg.GetHostname(), "host network: the node's UTS namespace")
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork())
	assert.Equal(t, []string{"127.0.0.1"}, cfg.GetDnsConfig().GetServers(), "ClusterFirst on the host network is Default, here without a resolv.conf")
	assert.Equal(t, []string{"."}, cfg.GetDnsConfig().GetSearches())
}

// TestSandboxConfigDNS: the host's resolv.conf, read for each sandbox
// config, and the events of package dns recorded on the pod and the node.
func TestSandboxConfigDNS(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 127.0.0.53\nsearch corp.example.\noptions edns0\n"), 0o644))
	rec := &eventtest.Recorder{}
	opts := containerconfig.Options{NodeName: "node-1", ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv, Recorder: rec}
	b := newBuilder(t, opts)
	pod := newPod("", nil, ctr("app"))
	cfg, err := b.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"},
		Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}, Options: []string{"ndots:5"}},
		cfg.GetDnsConfig())

	pod.Spec.DNSPolicy = v1.DNSDefault
	cfg, err = b.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, &runtimeapi.DNSConfig{Servers: []string{"127.0.0.53"}, Searches: []string{"corp.example"}, Options: []string{"edns0"}}, cfg.GetDnsConfig())
	assert.Empty(t, rec.Events())

	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644))
	cfg, err = b.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.53"}, cfg.GetDnsConfig().GetServers(), "read anew for each sandbox")

	opts.ClusterDNS = nil
	b = newBuilder(t, opts)
	pod.Spec.DNSPolicy = v1.DNSClusterFirst
	cfg, err = b.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.53"}, cfg.GetDnsConfig().GetServers(), "without cluster DNS, ClusterFirst is Default")
	events := rec.Events()
	require.Len(t, events, 2)
	assert.Equal(t, &v1.ObjectReference{Kind: "Node", Name: "node-1"}, events[0].Object)
	assert.Equal(t, pod, events[1].Object)
	for _, e := range events {
		assert.Equal(t, v1.EventTypeWarning+" MissingClusterDNS", e.Type+" "+e.Reason)
	}
	assert.Equal(t, `pod: "web_default(uid-1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
		events[1].Message)

	require.NoError(t, os.Remove(resolv))
	_, err = b.SandboxConfig(pod, 0)
	require.ErrorIs(t, err, os.ErrNotExist, "a resolv.conf that cannot be read fails the sandbox, as upstream's")
}

func TestTerminationMessageMount(t *testing.T) {
	pods := t.TempDir()
	s := newBuilder(t, containerconfig.Options{PodsDir: pods})
	c := ctr("app")
	c.TerminationMessagePath = "/dev/termination-log"
	pod := newPod("", nil, c)
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 1, nil, "", nil)
	require.NoError(t, err)
	want := filepath.Join(pods, "uid-1", "containers", "app", "1")
	assert.Equal(t, []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: want}}, cfg.GetMounts())
	st, err := os.Stat(want)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o666), st.Mode().Perm(), "writable by a non-root container, whatever the umask")

	pod.UID = "../escape"
	_, err = s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 1, nil, "", nil)
	assert.ErrorContains(t, err, "not a plain path element")

	// On a host that runs SELinux the file is relabelled, as upstream
	// asks only there.
	s = newBuilder(t, containerconfig.Options{PodsDir: pods, SELinuxEnabled: true})
	pod.UID = "uid-1"
	cfg, err = s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 2, nil, "", nil)
	require.NoError(t, err)
	assert.Equal(t, []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: filepath.Join(pods, "uid-1", "containers", "app", "2"), SelinuxRelabel: true}}, cfg.GetMounts())
}

func TestContainerConfigExpandsVariables(t *testing.T) {
	s := nodeBuilder(t, nil)
	c := ctr("app")
	c.Env = []v1.EnvVar{{Name: "A", Value: "one"}, {Name: "B", Value: "$(A)-two"}, {Name: "C", Value: "$(LATER) $$(A) $(A"}, {Name: "LATER", Value: "x"}}
	c.Command = []string{"echo", "$(B)", "$(NOPE)", "$$(A)", "$"}
	c.Args = []string{"$(C)"}
	pod := newPod("", nil, c)
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"echo", "one-two", "$(NOPE)", "$(A)", "$"}, cfg.GetCommand())
	assert.Equal(t, []string{"$(LATER) $(A) $(A"}, cfg.GetArgs())
	assert.Equal(t, "one-two", string(cfg.GetEnvs()[1].GetValue()))
}

func TestFSGroupIsASupplementalGroup(t *testing.T) {
	s := nodeBuilder(t, nil)
	c := ctr("app")
	pod := newPod("", nil, c)
	fsGroup := int64(2000)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup, SupplementalGroups: []int64{3000, 4000}}
	want := []int64{2000, 3000, 4000} // the fsGroup first, as upstream's
	sb, err := s.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, want, sb.GetLinux().GetSecurityContext().GetSupplementalGroups())
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.NoError(t, err)
	assert.Equal(t, want, cfg.GetLinux().GetSecurityContext().GetSupplementalGroups())
}

// A limit the container does not set reads, through the downward API, as the
// node's allocatable, and an unset request as zero, as upstream; without the
// node's allocatable an unset limit is a config error.
func TestContainerConfigDefaultLimitsFromAllocatable(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
	}
	build := func(alloc v1.ResourceList, env []v1.EnvVar) (map[string]string, error) {
		s := newBuilder(t, containerconfig.Options{NodeAllocatable: alloc})
		c := ctr("app")
		c.Env = env
		pod := newPod("", nil, c)
		cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
		if err != nil {
			return nil, err
		}
		got := map[string]string{}
		for _, kv := range cfg.GetEnvs() {
			got[kv.GetKey()] = string(kv.GetValue())
		}
		return got, nil
	}
	got, err := build(v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}, env)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"CPU": "2", "MEM": "4096"}, got)
	_, err = build(nil, env)
	assert.Error(t, err, "no limit and no allocatable")
	got, err = build(v1.ResourceList{v1.ResourceMemory: resource.MustParse("4Gi")},
		[]v1.EnvVar{{Name: "REQ", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.memory"}}}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"REQ": "0"}, got, "an unset request is not the allocatable")
}

// With pod-level limits (PodLevelResources), a container's unset limit reads
// as the pod's, and only a resource the pod does not limit as the node's
// allocatable (e2e "should provide default limits.cpu/memory from pod level
// resources"; 1250m reads as 2, rounded up).
func TestContainerConfigDefaultLimitsFromPodLevelResources(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "CPU", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory"}}},
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("4Gi")}
	for _, tc := range []struct {
		name   string
		limits v1.ResourceList
		want   map[string]string
	}{
		{"both from the pod", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
			map[string]string{"CPU": "2", "MEM": "67108864"}},
		{"memory from the node", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1250m")},
			map[string]string{"CPU": "2", "MEM": "4294967296"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBuilder(t, containerconfig.Options{NodeAllocatable: alloc})
			c := ctr("app")
			c.Env = env
			pod := newPod("", nil, c)
			pod.Spec.Resources = &v1.ResourceRequirements{Limits: tc.limits}
			cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
			require.NoError(t, err)
			got := map[string]string{}
			for _, kv := range cfg.GetEnvs() {
				got[kv.GetKey()] = string(kv.GetValue())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// The sandbox is privileged when any container is, or runtimes refuse the
// privileged container ("no privileged container allowed in sandbox").
func TestSandboxConfigPrivileged(t *testing.T) {
	s := nodeBuilder(t, nil)
	yes := true
	for _, tc := range []struct {
		name string
		mod  func(*v1.Pod)
		want bool
	}{
		{name: "no container privileged", mod: func(*v1.Pod) {}},
		{name: "an app container", mod: func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: &yes} }, want: true},
		{name: "an init container", mod: func(p *v1.Pod) {
			c := ctr("init")
			c.SecurityContext = &v1.SecurityContext{Privileged: &yes}
			p.Spec.InitContainers = []v1.Container{c}
		}, want: true},
		{name: "an ephemeral container", mod: func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name: "debug", SecurityContext: &v1.SecurityContext{Privileged: &yes}}}}
		}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("", nil, ctr("app"))
			tc.mod(pod)
			cfg, err := s.SandboxConfig(pod, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.GetLinux().GetSecurityContext().GetPrivileged())
		})
	}
}

// The sandbox's hostname, as upstream's: setHostnameAsFQDN puts the pod's
// FQDN in the kernel's nodename, which holds 64 characters (a longer one
// fails the sandbox); spec.hostnameOverride is the hostname, whatever
// spec.hostname and spec.subdomain say, and never an FQDN; a pod on the
// host's network keeps the node's (API validation forbids the override
// there).
func TestSandboxConfigHostname(t *testing.T) {
	s := nodeBuilder(t, nil)
	yes := true
	for _, tc := range []struct {
		name string
		spec func(*v1.PodSpec)
		want string
		err  string
	}{
		{name: "FQDN", spec: func(s *v1.PodSpec) { s.Hostname, s.Subdomain, s.SetHostnameAsFQDN = "h1", "sub", &yes },
			want: "h1.sub.default.svc.cluster.local"},
		{name: "FQDN without subdomain: the hostname", spec: func(s *v1.PodSpec) { s.Hostname, s.SetHostnameAsFQDN = "h1", &yes }, want: "h1"},
		{name: "FQDN too long", spec: func(s *v1.PodSpec) {
			s.Hostname, s.Subdomain, s.SetHostnameAsFQDN = strings.Repeat("h", 40), "sub", &yes
		},
			err: "FQDN " + strings.Repeat("h", 40) + ".sub.default.svc.cluster.local is too long (64 characters is the max, 70 characters requested)"},
		{name: "override alone", spec: func(s *v1.PodSpec) { s.HostnameOverride = ptr("override-host") }, want: "override-host"},
		{name: "override, a DNS subdomain", spec: func(s *v1.PodSpec) { s.HostnameOverride = ptr("override.example.host") },
			want: "override.example.host"},
		{name: "override over hostname", spec: func(s *v1.PodSpec) { s.Hostname, s.HostnameOverride = "custom-host", ptr("override-host") },
			want: "override-host"},
		{name: "override, subdomain ignored", spec: func(s *v1.PodSpec) { s.Subdomain, s.HostnameOverride = "sub", ptr("override-host") },
			want: "override-host"},
		{name: "override: no domain, so setHostnameAsFQDN changes nothing", spec: func(s *v1.PodSpec) {
			s.Subdomain, s.SetHostnameAsFQDN, s.HostnameOverride = "sub", &yes, ptr("override-host")
		}, want: "override-host"},
		{name: "override on the host network: none", spec: func(s *v1.PodSpec) { s.HostNetwork, s.HostnameOverride = true, ptr("override-host") }},
		{name: "override not a DNS subdomain", spec: func(s *v1.PodSpec) { s.HostnameOverride = ptr("Not-RFC1123") },
			err: `pod HostnameOverride "Not-RFC1123" is not a valid DNS subdomain`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("", nil, ctr("app"))
			tc.spec(&pod.Spec)
			cfg, err := s.SandboxConfig(pod, 0)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.GetHostname())
		})
	}
}

// statusMessageError is an error with a status message, as
// volume.SubPathError.
type statusMessageError struct{ detail, msg string }

func (e statusMessageError) Error() string         { return e.detail }
func (e statusMessageError) StatusMessage() string { return e.msg }

// statusMessage is what a container's CreateContainerConfigError shows for
// err, as ContainerConfig documents it.
func statusMessage(err error) string {
	var sm interface{ StatusMessage() string }
	if errors.As(err, &sm) {
		return sm.StatusMessage()
	}
	return err.Error()
}

// A config error has upstream's words for the container's status and the
// detail for logs.
func TestContainerConfigErrorStatusMessage(t *testing.T) {
	vols := mountsVolumes{err: fmt.Errorf("container app: volumeMount data: %w", statusMessageError{
		detail: `prepare subPath: subPath "logs": symlink logs points outside the volume`,
		msg:    `failed to prepare subPath for volumeMount "data" of container "app"`,
	})}
	c := ctr("app")
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "logs"}}
	_, err := containerConfig(newBuilder(t, containerconfig.Options{Volumes: vols}), newPod("", nil, c))
	require.ErrorContains(t, err, "points outside the volume", "the detail stays in the error")
	assert.Equal(t, `failed to prepare subPath for volumeMount "data" of container "app"`, statusMessage(err))

	c = ctr("app")
	c.Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nope"}}}}
	_, err = containerConfig(newBuilder(t, containerconfig.Options{}), newPod("", nil, c))
	require.EqualError(t, err, `container app: env A: unsupported fieldRef "spec.nope"`)
	assert.Equal(t, `unsupported fieldRef "spec.nope"`, statusMessage(err))
}

// devicesFunc is a ContainerDevices hook for tests.
type devicesFunc func(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error

func (f devicesFunc) ApplyDevices(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	return f(ctx, pod, c, cfg)
}

func TestContainerDevices(t *testing.T) {
	refuse := errors.New("device plugin PreStartContainer rpc failed with err: not ready")
	var seen []string
	b := newBuilder(t, containerconfig.Options{Devices: devicesFunc(func(_ context.Context, _ *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
		seen = append(seen, c.Name)
		if c.Name == "refused" {
			return refuse
		}
		cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: "/dev/gpu0", HostPath: "/dev/gpu0", Permissions: "rw"})
		return nil
	})})
	pod := newPod("", nil, ctr("app"), ctr("refused"))
	cfg, err := containerConfig(b, pod)
	require.NoError(t, err)
	assert.Equal(t, "/dev/gpu0", cfg.GetDevices()[0].GetContainerPath())
	_, err = b.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[1], cri.ContainerTypeRegular, 0, nil, "", nil)
	assert.ErrorIs(t, err, refuse)
	assert.Equal(t, []string{"app", "refused"}, seen)
}

type cgroupParents map[string]string

func (c cgroupParents) CgroupParent(pod *v1.Pod) (string, error) {
	if p, ok := c[string(pod.UID)]; ok {
		return p, nil
	}
	return "", errors.New("no cgroup")
}

func TestSandboxCgroupParent(t *testing.T) {
	b := newBuilder(t, containerconfig.Options{Cgroups: cgroupParents{"uid-1": "/kubepods/burstable/poduid-1"}})
	pod := newPod("", nil, ctr("app"))
	cfg, err := b.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, "/kubepods/burstable/poduid-1", cfg.GetLinux().GetCgroupParent())
	pod.UID = "uid-2"
	_, err = b.SandboxConfig(pod, 0)
	assert.EqualError(t, err, "sandbox config of web_default(uid-2): no cgroup", "a pod without a cgroup gets no sandbox config")
}

func TestRuntimeHandler(t *testing.T) {
	classes := containerconfig.RuntimeClassesFunc(func(name string) (*nodev1.RuntimeClass, error) {
		switch name {
		case "kata":
			return &nodev1.RuntimeClass{Handler: "kata-qemu"}, nil
		case "broken":
			return nil, errors.New("lister not synced")
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}, name)
	})
	for _, tc := range []struct {
		name, class, want, wantErr string
		classes                    containerconfig.RuntimeClasses
	}{
		{name: "no class: the default handler", want: "runc"},
		{name: "class looked up", class: "kata", classes: classes, want: "kata-qemu"},
		{name: "class missing", class: "gvisor", classes: classes, wantErr: `runtimeclasses.node.k8s.io "gvisor" not found`},
		{name: "lookup failed", class: "broken", classes: classes, wantErr: "failed to lookup RuntimeClass broken: lister not synced"},
		{name: "no lookup: the name passes through", class: "gvisor", want: "gvisor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, containerconfig.Options{RuntimeHandler: "runc", RuntimeClasses: tc.classes})
			pod := newPod("", nil, ctr("app"))
			if tc.class != "" {
				pod.Spec.RuntimeClassName = &tc.class
			}
			h, err := b.RuntimeHandler(pod)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, h)
		})
	}
}

func TestNewRefusesUnusableOptions(t *testing.T) {
	for name, opts := range map[string]containerconfig.Options{
		"a host name as host IP":        {HostIPs: []string{"node-1"}},
		"a bad DNS server":              {ClusterDNS: []string{"10.96.0.300"}},
		"negative memory":               {MemoryCapacity: -1},
		"a cluster domain with a space": {ClusterDomain: "cluster .local"},
		"a CFS period below 1ms":        {CPUCFSQuotaPeriod: 999 * time.Microsecond},
		"a CFS period above 1s":         {CPUCFSQuotaPeriod: time.Second + time.Microsecond},
		"a negative CFS period":         {CPUCFSQuotaPeriod: -time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := containerconfig.New(opts)
			assert.ErrorIs(t, err, containerconfig.ErrInvalidOptions)
		})
	}
	_, err := containerconfig.New(containerconfig.Options{HostIPs: []string{"192.0.2.10", "2001:db8::10"}, ClusterDNS: []string{"10.96.0.10"}})
	assert.NoError(t, err)
}

// The CFS period of a container that limits CPU is the node's
// cpuCFSQuotaPeriod (CustomCPUCFSQuotaPeriod): its quota the limit's share
// of that period, never below 1ms (upstream's milliCPUToQuota); a container
// without a CPU limit gets neither.
func TestResourcesCFSQuotaPeriod(t *testing.T) {
	for _, tc := range []struct {
		name       string
		period     time.Duration
		limit      string
		wantPeriod int64
		wantQuota  int64
	}{
		{"default", 0, "500m", 100000, 50000},
		{"50ms halves the quota", 50 * time.Millisecond, "500m", 50000, 25000},
		{"50ms, two CPUs", 50 * time.Millisecond, "2", 50000, 100000},
		{"1s", time.Second, "500m", 1000000, 500000},
		{"1ms: the quota at its 1ms floor", time.Millisecond, "500m", 1000, 1000},
		{"10ms, a tiny limit: the floor", 10 * time.Millisecond, "50m", 10000, 1000},
		{"no CPU limit: neither", 50 * time.Millisecond, "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := containerconfig.New(containerconfig.Options{CPUCFSQuotaPeriod: tc.period})
			require.NoError(t, err)
			c := sized("app", "100m", tc.limit, "")
			r := b.Resources(&v1.Pod{}, &c)
			assert.Equal(t, tc.wantPeriod, r.GetCpuPeriod(), "period")
			assert.Equal(t, tc.wantQuota, r.GetCpuQuota(), "quota")
			assert.Equal(t, int64(102), r.GetCpuShares(), "shares do not depend on the period")
		})
	}
}

func TestResourcesShares(t *testing.T) {
	for _, tc := range []struct {
		cpu    string
		shares int64
	}{{"", 2}, {"1m", 2}, {"100m", 102}, {"1", 1024}, {"256", 262144}, {"1000", 262144}} {
		c := sized("app", tc.cpu, "", "")
		assert.Equal(t, tc.shares, containerconfig.Resources(&v1.Pod{}, &c).GetCpuShares(), tc.cpu)
	}
}

// In a pod with pod-level resources, a container without a CPU or memory
// limit runs with the pod's, its shares from the pod's CPU limit when it
// requests no CPU; its own limits and requests win.
func TestResourcesPodLevel(t *testing.T) {
	const mi = int64(1 << 20)
	for _, tc := range []struct {
		name          string
		podLimits     v1.ResourceList
		c             v1.Container
		shares, quota int64
		memory        int64
	}{
		{"nothing of its own", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi")},
			ctr("app"), 1024, 100000, 256 * mi},
		{"its own memory limit", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi")},
			sized("app", "", "", "64Mi"), 1024, 100000, 64 * mi},
		{"its own CPU request", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
			sized("app", "100m", "", ""), 102, 100000, 0},
		{"its own CPU limit", v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
			sized("app", "", "500m", ""), 512, 50000, 0},
		{"pod-level requests only", nil, ctr("app"), 2, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("", nil, tc.c)
			pod.Spec.Resources = &v1.ResourceRequirements{Limits: tc.podLimits, Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}
			r := containerconfig.Resources(pod, &pod.Spec.Containers[0])
			assert.Equal(t, tc.shares, r.GetCpuShares(), "shares")
			assert.Equal(t, tc.quota, r.GetCpuQuota(), "quota")
			assert.Equal(t, tc.memory, r.GetMemoryLimitInBytes(), "memory")
		})
	}
	c := ctr("app")
	assert.Equal(t, int64(0), containerconfig.Resources(&v1.Pod{}, &c).GetMemoryLimitInBytes(), "no pod-level resources: nothing")
}

// Where the node accounts swap, the swap limit is the memory limit; a
// container restarted by memory resizes records its memory request.
func TestMemoryAccounting(t *testing.T) {
	c := sized("app", "", "", "64Mi")
	c.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod := newPod("", nil, c)
	cfg, err := containerConfig(newBuilder(t, containerconfig.Options{MemorySwapController: true}), pod)
	require.NoError(t, err)
	assert.Equal(t, int64(64<<20), cfg.GetLinux().GetResources().GetMemorySwapLimitInBytes())
	assert.Equal(t, "67108864", cfg.GetAnnotations()[containerconfig.MemoryRequestAnnotation])

	pod.Spec.Containers[0].ResizePolicy = nil
	cfg, err = containerConfig(newBuilder(t, containerconfig.Options{}), pod)
	require.NoError(t, err)
	assert.Zero(t, cfg.GetLinux().GetResources().GetMemorySwapLimitInBytes())
	assert.NotContains(t, cfg.GetAnnotations(), containerconfig.MemoryRequestAnnotation)
}

type claimDevicesFunc func(pod *v1.Pod, c *v1.Container) ([]string, error)

func (f claimDevicesFunc) CDIDevices(pod *v1.Pod, c *v1.Container) ([]string, error) {
	return f(pod, c)
}

var _ containerconfig.ClaimDevices = (*dra.Manager)(nil)

// The CDI devices of a container's resource claims go into its config's
// CDIDevices, after the device plugins' (upstream's order); their error is
// the config's.
func TestClaimDevices(t *testing.T) {
	refuse := errors.New("internal error: unable to get claim info for ResourceClaim gpu in namespace ns")
	b := newBuilder(t, containerconfig.Options{
		Devices: devicesFunc(func(_ context.Context, _ *v1.Pod, _ *v1.Container, cfg *runtimeapi.ContainerConfig) error {
			cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: "plugin.example.com/dev=0"})
			return nil
		}),
		ClaimDevices: claimDevicesFunc(func(_ *v1.Pod, c *v1.Container) ([]string, error) {
			if c.Name == "refused" {
				return nil, refuse
			}
			return []string{"gpu.example.com/gpu=0", "gpu.example.com/gpu=1"}, nil
		}),
	})
	pod := newPod("", nil, ctr("app"), ctr("refused"))
	cfg, err := containerConfig(b, pod)
	require.NoError(t, err)
	var names []string
	for _, d := range cfg.GetCDIDevices() {
		names = append(names, d.GetName())
	}
	assert.Equal(t, []string{"plugin.example.com/dev=0", "gpu.example.com/gpu=0", "gpu.example.com/gpu=1"}, names)
	_, err = b.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[1], cri.ContainerTypeRegular, 0, nil, "", nil)
	assert.ErrorIs(t, err, refuse)
}

type cpusFunc func(pod *v1.Pod, c *v1.Container) (string, bool)

func (f cpusFunc) ContainerCPUSet(pod *v1.Pod, c *v1.Container) (string, bool) { return f(pod, c) }

// A CPU manager's CPUs become the container's cpuset; a container with CPUs
// of its own runs without a CFS quota (DisableCPUQuotaWithExclusiveCPUs).
func TestContainerCPUs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cpus      string
		exclusive bool
		quota     int64
	}{
		{"exclusive", "2-3", true, -1},
		{"shared pool", "0-1,4-7", false, 200000},
		{"no cpuset", "", false, 200000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("", nil, sized("app", "2", "2", "64Mi"))
			b := newBuilder(t, containerconfig.Options{CPUs: cpusFunc(func(*v1.Pod, *v1.Container) (string, bool) { return tc.cpus, tc.exclusive })})
			cfg, err := containerConfig(b, pod)
			require.NoError(t, err)
			r := cfg.GetLinux().GetResources()
			assert.Equal(t, tc.cpus, r.GetCpusetCpus())
			assert.Equal(t, tc.quota, r.GetCpuQuota())
		})
	}
}

type memoryNodesFunc func(pod *v1.Pod, c *v1.Container) string

func (f memoryNodesFunc) ContainerMemoryNodes(pod *v1.Pod, c *v1.Container) string { return f(pod, c) }

// A memory manager's NUMA nodes become the container's cpuset_mems.
func TestContainerMemoryNodes(t *testing.T) {
	pod := newPod("", nil, sized("app", "1", "1", "64Mi"))
	b := newBuilder(t, containerconfig.Options{MemoryNodes: memoryNodesFunc(func(*v1.Pod, *v1.Container) string { return "0-1" })})
	cfg, err := containerConfig(b, pod)
	require.NoError(t, err)
	assert.Equal(t, "0-1", cfg.GetLinux().GetResources().GetCpusetMems())
	cfg, err = containerConfig(newBuilder(t, containerconfig.Options{}), pod)
	require.NoError(t, err)
	assert.Empty(t, cfg.GetLinux().GetResources().GetCpusetMems())
}
