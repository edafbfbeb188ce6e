package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

func newSyncer(t *testing.T, vols map[string]string) *podsync.Syncer {
	t.Helper()
	rt := fake.New(fake.Options{})
	t.Cleanup(rt.Close)
	s, err := podsync.New(podsync.Options{Runtime: rt, LogRoot: "/logs", NodeName: "node-1", HostIPs: []string{"192.168.1.10"},
		ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local",
		Volumes: podsync.VolumeHostPathsFunc(func(*v1.Pod) (map[string]string, error) { return vols, nil })})
	require.NoError(t, err)
	return s
}

func TestContainerConfig(t *testing.T) {
	s := newSyncer(t, map[string]string{"data": "/var/lib/kubelet/pods/uid-1/volumes/data"})
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
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 2, []string{"10.88.0.5"}, "sha256:abc")
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
	assert.Equal(t, podsync.FormatHash(podsync.HashContainer(&c)), cfg.GetAnnotations()[cri.ContainerHashAnnotation])
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
	return map[string]string{"data": "/joined/by/podsync"}, nil
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
			rt := fake.New(fake.Options{})
			t.Cleanup(rt.Close)
			s, err := podsync.New(podsync.Options{Runtime: rt, LogRoot: "/logs", Volumes: tc.vols})
			require.NoError(t, err)
			c := ctr("app")
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "a/link"}}
			pod := newPod("", nil, c)
			cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "sha256:abc")
			if tc.want != "" {
				require.EqualError(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/resolved/by/volumes", Readonly: true}}, cfg.GetMounts())
		})
	}
}

// statusMessageError is an error with a status message, as
// volume.SubPathError.
type statusMessageError struct{ detail, msg string }

func (e statusMessageError) Error() string         { return e.detail }
func (e statusMessageError) StatusMessage() string { return e.msg }

func TestMountErrorStatusMessage(t *testing.T) {
	h := newHarness(t)
	vols := mountsVolumes{err: fmt.Errorf("container app: volumeMount data: %w", statusMessageError{
		detail: `prepare subPath: subPath "logs": symlink logs points outside the volume`,
		msg:    `failed to prepare subPath for volumeMount "data" of container "app"`,
	})}
	s, err := podsync.New(podsync.Options{Runtime: h.rt, LogRoot: t.TempDir(), Volumes: vols, Recorder: h.rec})
	require.NoError(t, err)
	c := ctr("app")
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "logs"}}
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	st := step(t, s.SyncPod(context.Background(), pod, h.status(pod)), "app")
	require.ErrorIs(t, st.Err, podsync.ErrCreateContainerConfig)
	assert.Equal(t, podsync.ReasonCreateContainerConfigError, st.Reason)
	assert.Equal(t, `failed to prepare subPath for volumeMount "data" of container "app"`, st.Message, "upstream's message, no host detail")
	assert.Contains(t, h.rec.Strings(), `Warning Failed Error: failed to prepare subPath for volumeMount "data" of container "app"`)
	assert.ErrorContains(t, st.Err, "points outside the volume", "the detail stays in the error")
	assert.Empty(t, h.rt.CallsOf(fake.CreateContainer))
}

func TestContainerConfigRejects(t *testing.T) {
	s := newSyncer(t, map[string]string{"data": "/v/data"})
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
			_, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "")
			assert.Error(t, err)
		})
	}
}

func TestSandboxConfig(t *testing.T) {
	s := newSyncer(t, nil)
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
	assert.Nil(t, cfg.GetDnsConfig(), "ClusterFirst on host network falls back to the node's")
}

func TestKillPodRunsPreStopExec(t *testing.T) {
	h := newHarness(t)
	c := ctr("app")
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}}
	grace := int64(20)
	pod := newPod("", nil, c)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	require.NoError(t, h.sync(pod).Err())
	st := h.status(pod)
	require.NoError(t, h.s.KillPod(context.Background(), pod, st, nil).Err())
	execs := h.rt.CallsOf(fake.ExecSync)
	require.Len(t, execs, 1)
	assert.Equal(t, []string{"/bin/drain"}, execs[0].Request.(*runtimeapi.ExecSyncRequest).GetCmd())
	assert.Zero(t, execs[0].Request.(*runtimeapi.ExecSyncRequest).GetTimeout(),
		"an exec preStop hook has no timeout of its own: it runs on past the grace period, until its container stops")
	stops := h.rt.CallsOf(fake.StopContainer)
	require.Len(t, stops, 1)
	assert.Equal(t, int64(20), stops[0].Request.(*runtimeapi.StopContainerRequest).GetTimeout())

	// Without the pod (known only from the runtime) the hook comes from the
	// container's annotation.
	require.NoError(t, h.sync(pod).Err()) // new sandbox, new container
	require.NoError(t, h.s.KillPod(context.Background(), nil, h.status(pod), nil).Err())
	assert.Len(t, h.rt.CallsOf(fake.ExecSync), 2)
	stops = h.rt.CallsOf(fake.StopContainer)
	assert.Equal(t, int64(20), stops[len(stops)-1].Request.(*runtimeapi.StopContainerRequest).GetTimeout())
}

func TestKillPodRunsPreStopHTTP(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Path + " " + r.Header.Get("X-Drain"))
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	h := newHarness(t)
	c := ctr("app")
	c.Ports = []v1.ContainerPort{{Name: "admin", ContainerPort: int32(mustAtoi(t, port))}}
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
		Host: host, Port: intstr.FromString("admin"), Path: "/drain", HTTPHeaders: []v1.HTTPHeader{{Name: "X-Drain", Value: "now"}},
	}}}
	pod := newPod("", nil, c)
	require.NoError(t, h.sync(pod).Err())
	require.NoError(t, h.s.KillPod(context.Background(), pod, h.status(pod), nil).Err())
	assert.Equal(t, "/drain now", got.Load())
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

func TestTerminationMessageMount(t *testing.T) {
	rt := fake.New(fake.Options{})
	t.Cleanup(rt.Close)
	pods := t.TempDir()
	s, err := podsync.New(podsync.Options{Runtime: rt, LogRoot: t.TempDir(), PodsDir: pods})
	require.NoError(t, err)
	c := ctr("app")
	c.TerminationMessagePath = "/dev/termination-log"
	pod := newPod("", nil, c)
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 1, nil, "")
	require.NoError(t, err)
	want := filepath.Join(pods, "uid-1", "containers", "app", "1")
	assert.Equal(t, []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: want}}, cfg.GetMounts())
	st, err := os.Stat(want)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o666), st.Mode().Perm(), "writable by a non-root container, whatever the umask")

	pod.UID = "../escape"
	_, err = s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 1, nil, "")
	assert.ErrorContains(t, err, "not a plain path element")
}

func TestContainerConfigExpandsVariables(t *testing.T) {
	s := newSyncer(t, nil)
	c := ctr("app")
	c.Env = []v1.EnvVar{{Name: "A", Value: "one"}, {Name: "B", Value: "$(A)-two"}, {Name: "C", Value: "$(LATER) $$(A) $(A"}, {Name: "LATER", Value: "x"}}
	c.Command = []string{"echo", "$(B)", "$(NOPE)", "$$(A)", "$"}
	c.Args = []string{"$(C)"}
	pod := newPod("", nil, c)
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"echo", "one-two", "$(NOPE)", "$(A)", "$"}, cfg.GetCommand())
	assert.Equal(t, []string{"$(LATER) $(A) $(A"}, cfg.GetArgs())
	assert.Equal(t, "one-two", string(cfg.GetEnvs()[1].GetValue()))
}

func TestFSGroupIsASupplementalGroup(t *testing.T) {
	s := newSyncer(t, nil)
	c := ctr("app")
	pod := newPod("", nil, c)
	fsGroup := int64(2000)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup, SupplementalGroups: []int64{3000, 4000}}
	want := []int64{2000, 3000, 4000} // the fsGroup first, as upstream's
	sb, err := s.SandboxConfig(pod, 0)
	require.NoError(t, err)
	assert.Equal(t, want, sb.GetLinux().GetSecurityContext().GetSupplementalGroups())
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "")
	require.NoError(t, err)
	assert.Equal(t, want, cfg.GetLinux().GetSecurityContext().GetSupplementalGroups())
}

// As upstream orders a pod's termination: the app containers stop first,
// then the sidecars in reverse order, each once the one after it stopped;
// every preStop hook runs at once, before any wait.
func TestKillPodStopsSidecarsInReverseOrder(t *testing.T) {
	h := newHarness(t)
	withHook := func(c v1.Container) v1.Container {
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain", c.Name}}}}
		return c
	}
	pod := newPod("", nil, withHook(ctr("app1")), ctr("app2"))
	pod.Spec.InitContainers = []v1.Container{withHook(sidecar("side1")), sidecar("side2"), withHook(sidecar("side3"))}
	for range 5 {
		require.NoError(t, h.sync(pod).Err())
	}
	st := h.status(pod)
	running := 0
	for _, c := range st.Containers {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	require.Equal(t, 5, running, "every container runs")

	require.NoError(t, h.s.KillPod(context.Background(), pod, st, nil).Err())
	var stopped []string
	for _, c := range h.rt.CallsOf(fake.StopContainer) {
		stopped = append(stopped, st.ContainerByID(c.Request.(*runtimeapi.StopContainerRequest).GetContainerId()).GetMetadata().GetName())
	}
	require.Len(t, stopped, 5)
	assert.ElementsMatch(t, []string{"app1", "app2"}, stopped[:2], "the apps first")
	assert.Equal(t, []string{"side3", "side2", "side1"}, stopped[2:], "then the sidecars, last first")
	var hooks []string
	for _, c := range h.rt.CallsOf(fake.ExecSync) {
		hooks = append(hooks, c.Request.(*runtimeapi.ExecSyncRequest).GetCmd()[1])
	}
	assert.ElementsMatch(t, []string{"app1", "side1", "side3"}, hooks)
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
		rt := fake.New(fake.Options{})
		t.Cleanup(rt.Close)
		s, err := podsync.New(podsync.Options{Runtime: rt, LogRoot: "/logs", NodeAllocatable: alloc})
		require.NoError(t, err)
		c := ctr("app")
		c.Env = env
		pod := newPod("", nil, c)
		cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "")
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

// The sandbox is privileged when any container is, or runtimes refuse the
// privileged container ("no privileged container allowed in sandbox").
func TestSandboxConfigPrivileged(t *testing.T) {
	s := newSyncer(t, nil)
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

// setHostnameAsFQDN puts the pod's FQDN in the kernel's nodename, which
// holds 64 characters: a longer one fails the sandbox, as upstream.
func TestSandboxConfigHostnameAsFQDN(t *testing.T) {
	s := newSyncer(t, nil)
	yes := true
	for _, tc := range []struct {
		name, hostname, subdomain, want, err string
	}{
		{name: "FQDN", hostname: "h1", subdomain: "sub", want: "h1.sub.default.svc.cluster.local"},
		{name: "no subdomain: the hostname", hostname: "h1", want: "h1"},
		{name: "too long", hostname: strings.Repeat("h", 40), subdomain: "sub",
			err: "FQDN " + strings.Repeat("h", 40) + ".sub.default.svc.cluster.local is too long (64 characters is the max, 70 characters requested)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod("", nil, ctr("app"))
			pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.SetHostnameAsFQDN = tc.hostname, tc.subdomain, &yes
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
