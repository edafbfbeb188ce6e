package devices_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/devices/devicestest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const res = "example.com/gpu"

// node is a running manager in a temporary directory, on a fake clock.
type node struct {
	m       *devices.Manager
	clk     *testingclock.FakeClock
	dir     string
	changes chan struct{}
}

func startNode(t *testing.T, dir string) *node {
	t.Helper()
	n, stop := startStoppable(t, dir)
	t.Cleanup(stop)
	return n
}

// startNodeWithNUMA is startNode on a machine of the given NUMA nodes.
func startNodeWithNUMA(t *testing.T, numa ...int) *node {
	t.Helper()
	n, stop := startStoppable(t, "", numa...)
	t.Cleanup(stop)
	return n
}

// startStoppable starts a manager whose stop the test chooses.
func startStoppable(t *testing.T, dir string, numa ...int) (*node, func()) {
	t.Helper()
	return startStoppableWith(t, devices.Options{Dir: dir, NUMANodes: numa})
}

// startNodeWith is startNode with options: the test's Dir (a temporary
// one when empty), its clock and change notifications are set here.
func startNodeWith(t *testing.T, opts devices.Options) *node {
	t.Helper()
	n, stop := startStoppableWith(t, opts)
	t.Cleanup(stop)
	return n
}

func startStoppableWith(t *testing.T, opts devices.Options) (*node, func()) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = shortTempDir(t)
	}
	n := &node{clk: testingclock.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)), dir: opts.Dir, changes: make(chan struct{}, 1)}
	opts.Clock = n.clk
	opts.OnChange = func() {
		select {
		case n.changes <- struct{}{}:
		default:
		}
	}
	var err error
	n.m, err = devices.New(opts)
	require.NoError(t, err)
	require.NoError(t, n.m.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.m.Run(ctx) }()
	return n, func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// shortTempDir is a temporary directory whose sockets' paths fit the 108
// bytes a unix socket's path may have.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kkdev")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (n *node) plugin(t *testing.T, p *devicestest.Plugin) error {
	t.Helper()
	t.Cleanup(p.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.StartAndRegister(ctx, n.m.SocketPath())
}

// counts is a resource's capacity and allocatable; -1 when absent.
type counts struct{ capacity, allocatable int64 }

func (n *node) counts(name string) counts {
	capacity, allocatable := n.m.Resources()
	c := counts{-1, -1}
	if q, ok := capacity[v1.ResourceName(name)]; ok {
		c.capacity = q.Value()
	}
	if q, ok := allocatable[v1.ResourceName(name)]; ok {
		c.allocatable = q.Value()
	}
	return c
}

// waitCounts waits, on the manager's change notifications, for a resource
// to reach want.
func (n *node) waitCounts(t *testing.T, name string, want counts) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for n.counts(name) != want {
		select {
		case <-n.changes:
		case <-deadline:
			t.Fatalf("%s: counts %+v, want %+v", name, n.counts(name), want)
		}
	}
}

func TestRegistrationRefused(t *testing.T) {
	n := startNode(t, "")
	for _, tc := range []struct {
		name string
		req  *pluginapi.RegisterRequest
		want string
	}{
		{"old version", &pluginapi.RegisterRequest{Version: "v1alpha", Endpoint: "p.sock", ResourceName: res},
			`requested API version "v1alpha" is not supported by kubelet. Supported versions are ["v1beta1"]`},
		{"no domain", &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "p.sock", ResourceName: "gpu"},
			`the ResourceName "gpu" is invalid`},
		{"kubernetes.io", &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "p.sock", ResourceName: "kubernetes.io/gpu"},
			`the ResourceName "kubernetes.io/gpu" is invalid`},
		{"bad name", &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "p.sock", ResourceName: "example.com/-gpu"},
			`the ResourceName "example.com/-gpu" is invalid`},
		{"endpoint out of the directory", &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "../p.sock", ResourceName: res},
			`the Endpoint "../p.sock" is invalid`},
		{"absolute endpoint", &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "/run/p.sock", ResourceName: res},
			`the Endpoint "/run/p.sock" is invalid`},
		{"no endpoint", &pluginapi.RegisterRequest{Version: pluginapi.Version, ResourceName: res},
			`the Endpoint "" is invalid`},
		{"nobody listens", &pluginapi.RegisterRequest{Version: pluginapi.Version, Endpoint: "absent.sock", ResourceName: res},
			`failed to get device plugin options`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := register(t, n.m.SocketPath(), tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, counts{-1, -1}, n.counts(tc.req.ResourceName))
		})
	}
}

func register(t *testing.T, socket string, req *pluginapi.RegisterRequest) error {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, req)
	return err
}

func TestOptionsFailureRefusesTheRegistration(t *testing.T) {
	n := startNode(t, "")
	p := devicestest.New(res, devicestest.Healthy("a")...)
	p.Fail = func(method string) error {
		if method == devicestest.GetDevicePluginOptions {
			return errors.New("GetDevicePluginOptions failed")
		}
		return nil
	}
	err := n.plugin(t, p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed to get device plugin options")
	assert.Contains(t, err.Error(), "GetDevicePluginOptions failed")
	assert.Equal(t, []string{devicestest.GetDevicePluginOptions}, p.Calls())
	assert.Equal(t, counts{-1, -1}, n.counts(res))
}

func TestHealthSetsAllocatable(t *testing.T) {
	n := startNode(t, "")
	p := devicestest.New(res, devicestest.Healthy("0", "1", "2", "3")...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{4, 4})
	for _, step := range []struct {
		healthy, unhealthy []string
		want               counts
	}{
		{[]string{"0", "1", "2"}, []string{"3"}, counts{4, 3}},
		{[]string{"0", "1", "2", "3"}, nil, counts{4, 4}},
		{[]string{"0", "2"}, []string{"1", "3"}, counts{4, 2}},
		{[]string{"0"}, nil, counts{1, 1}}, // a device that disappears leaves the capacity
	} {
		p.SetDevices(append(devicestest.Healthy(step.healthy...), devicestest.Unhealthy(step.unhealthy...)...)...)
		n.waitCounts(t, res, step.want)
	}
}

func TestListAndWatchFailingAtOnce(t *testing.T) {
	n := startNode(t, "")
	p := devicestest.New(res, devicestest.Healthy("a")...)
	p.Fail = func(method string) error {
		if method == devicestest.ListAndWatch {
			return errors.New("ListAndWatch failed")
		}
		return nil
	}
	require.NoError(t, n.plugin(t, p))
	// Registered, with nothing to allocate, and never listed again.
	n.waitCounts(t, res, counts{0, 0})
	assert.Equal(t, []string{devicestest.GetDevicePluginOptions, devicestest.ListAndWatch}, p.Calls())
	n.clk.Step(devices.DefaultStopGracePeriod - time.Second)
	assert.Equal(t, counts{0, 0}, n.counts(res))
	assert.Equal(t, []string{devicestest.GetDevicePluginOptions, devicestest.ListAndWatch}, p.Calls())
}

func TestPluginGoneKeepsCapacityForTheGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(p *devicestest.Plugin)
	}{
		{"stream fails", func(p *devicestest.Plugin) { p.Break(errors.New("ListAndWatch failed")) }},
		{"plugin stops", func(p *devicestest.Plugin) { p.Stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, "")
			p := devicestest.New(res, devicestest.Healthy("0", "1")...)
			require.NoError(t, n.plugin(t, p))
			n.waitCounts(t, res, counts{2, 2})
			tc.leave(p)
			n.waitCounts(t, res, counts{2, 0})
			n.clk.Step(devices.DefaultStopGracePeriod - time.Second)
			assert.Equal(t, counts{2, 0}, n.counts(res))
			n.clk.Step(time.Second)
			assert.Equal(t, counts{0, 0}, n.counts(res), "removed, and reported as zero")
			assert.Equal(t, counts{0, 0}, n.counts(res), "and so it stays")

			// A plugin that registers again brings its devices back.
			again := devicestest.New(res, devicestest.Healthy("0", "1", "2")...)
			require.NoError(t, n.plugin(t, again))
			n.waitCounts(t, res, counts{3, 3})
		})
	}
}

func TestNewRegistrationReplacesTheOld(t *testing.T) {
	n := startNode(t, "")
	old := devicestest.New(res, devicestest.Healthy("0")...)
	require.NoError(t, n.plugin(t, old))
	n.waitCounts(t, res, counts{1, 1})
	p := devicestest.New(res, devicestest.Healthy("0", "1")...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{2, 2})
	// The old plugin going away is no news.
	old.Stop()
	old.SetDevices()
	n.clk.Step(devices.DefaultStopGracePeriod)
	assert.Equal(t, counts{2, 2}, n.counts(res))
}

func pod(uid string, init []v1.Container, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)},
		Spec: v1.PodSpec{InitContainers: init, Containers: containers}}
}

func ctr(name string, limits map[string]int64) v1.Container {
	c := v1.Container{Name: name, Image: "busybox"}
	if len(limits) > 0 {
		c.Resources.Limits = v1.ResourceList{}
		for r, q := range limits {
			c.Resources.Limits[v1.ResourceName(r)] = *resource.NewQuantity(q, resource.DecimalSI)
		}
	}
	return c
}

func sidecar(c v1.Container) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func TestAdmitAllocates(t *testing.T) {
	n := startNode(t, "")
	p := devicestest.New(res, devicestest.Healthy("0", "1", "2")...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{3, 3})

	a := pod("a", nil, ctr("c", map[string]int64{res: 2}), ctr("plain", map[string]int64{"cpu": 1, "example.com/other": 1}))
	ok, reason, msg := n.m.Admit(a, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	assert.Equal(t, map[string][]string{res: {"0", "1"}}, n.m.Devices(a.UID, "c"))
	assert.Nil(t, n.m.Devices(a.UID, "plain"), "a resource no plugin serves is not the device manager's")

	b := pod("b", nil, ctr("c", map[string]int64{res: 2}))
	ok, reason, msg = n.m.Admit(b, []*v1.Pod{a})
	assert.False(t, ok)
	assert.Equal(t, devices.ReasonUnexpectedAdmissionError, reason)
	assert.Equal(t, "Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected", msg)
	assert.Nil(t, n.m.Devices(b.UID, "c"))

	// Once a is no longer active, its devices are free again.
	ok, _, msg = n.m.Admit(b, nil)
	require.True(t, ok, msg)
	assert.Len(t, n.m.Devices(b.UID, "c")[res], 2)
	assert.Nil(t, n.m.Devices(a.UID, "c"))

	// Admitting b again (an agent restart) keeps its devices.
	before := n.m.Devices(b.UID, "c")
	ok, _, msg = n.m.Admit(b, nil)
	require.True(t, ok, msg)
	assert.Equal(t, before, n.m.Devices(b.UID, "c"))
}

func TestAdmitRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		devices []*pluginapi.Device
		counts  counts
		fail    string
		want    string
	}{
		{"only unhealthy devices", devicestest.Unhealthy("0"), counts{1, 0}, "",
			"Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/gpu, which is unexpected"},
		{"the plugin refuses", devicestest.Healthy("0"), counts{1, 1}, devicestest.Allocate,
			"Allocate failed due to rpc error: code = Unknown desc = no, which is unexpected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, "")
			p := devicestest.New(res, tc.devices...)
			p.Fail = func(method string) error {
				if method == tc.fail {
					return errors.New("no")
				}
				return nil
			}
			require.NoError(t, n.plugin(t, p))
			n.waitCounts(t, res, tc.counts)
			ok, reason, msg := n.m.Admit(pod("a", nil, ctr("c", map[string]int64{res: 1})), nil)
			assert.False(t, ok)
			assert.Equal(t, devices.ReasonUnexpectedAdmissionError, reason)
			assert.Equal(t, tc.want, msg)
		})
	}
}

func TestInitContainerDevicesAreReused(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		// want: each container's devices.
		want map[string][]string
	}{
		{"an init container's device goes on to the app container",
			pod("a", []v1.Container{ctr("init", map[string]int64{res: 1})}, ctr("app", map[string]int64{res: 2})),
			map[string][]string{"init": {"0"}, "app": {"0", "1"}}},
		{"a sidecar keeps its device",
			pod("a", []v1.Container{sidecar(ctr("side", map[string]int64{res: 1})), ctr("init", map[string]int64{res: 1})},
				ctr("app", map[string]int64{res: 1})),
			map[string][]string{"side": {"0"}, "init": {"1"}, "app": {"1"}}},
		{"a sidecar after an init container takes its device, and keeps it",
			pod("a", []v1.Container{ctr("init", map[string]int64{res: 1}), sidecar(ctr("side", map[string]int64{res: 1}))},
				ctr("app", map[string]int64{res: 1})),
			map[string][]string{"init": {"0"}, "side": {"0"}, "app": {"1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, "")
			require.NoError(t, n.plugin(t, devicestest.New(res, devicestest.Healthy("0", "1", "2")...)))
			n.waitCounts(t, res, counts{3, 3})
			ok, _, msg := n.m.Admit(tc.pod, nil)
			require.True(t, ok, msg)
			for c, want := range tc.want {
				assert.Equal(t, want, n.m.Devices(tc.pod.UID, c)[res], c)
			}
		})
	}
}

func TestChangedRequestIsRefused(t *testing.T) {
	n := startNode(t, "")
	require.NoError(t, n.plugin(t, devicestest.New(res, devicestest.Healthy("0", "1")...)))
	n.waitCounts(t, res, counts{2, 2})
	ok, _, msg := n.m.Admit(pod("a", nil, ctr("c", map[string]int64{res: 1})), nil)
	require.True(t, ok, msg)
	ok, _, msg = n.m.Admit(pod("a", nil, ctr("c", map[string]int64{res: 2})), nil)
	assert.False(t, ok)
	assert.Equal(t, `Allocate failed due to pod "a" container "c" changed request for resource "example.com/gpu" from 1 to 2, which is unexpected`, msg)
}

func TestPreferredAllocation(t *testing.T) {
	n := startNode(t, "")
	p := devicestest.New(res, devicestest.Healthy("0", "1", "2", "3")...)
	p.Options = &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}
	p.Prefer = func(*pluginapi.ContainerPreferredAllocationRequest) []string { return []string{"3", "1"} }
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{4, 4})
	a := pod("a", nil, ctr("c", map[string]int64{res: 2}))
	ok, _, msg := n.m.Admit(a, nil)
	require.True(t, ok, msg)
	assert.Equal(t, []string{"1", "3"}, n.m.Devices(a.UID, "c")[res])
}

func TestApplyDevices(t *testing.T) {
	n := startNode(t, "")
	p := devicestest.New(res, devicestest.Healthy("0")...)
	p.Options = &pluginapi.DevicePluginOptions{PreStartRequired: true}
	p.Answer = func(ids []string) *pluginapi.ContainerAllocateResponse {
		return &pluginapi.ContainerAllocateResponse{
			Envs:        map[string]string{"GPU": ids[0], "SHARED": "plugin"},
			Mounts:      []*pluginapi.Mount{{ContainerPath: "/dev-lib", HostPath: "/opt/gpu/lib", ReadOnly: true}},
			Devices:     []*pluginapi.DeviceSpec{{ContainerPath: "/dev/gpu0", HostPath: "/dev/gpu0", Permissions: "rw"}},
			Annotations: map[string]string{"gpu.example.com/id": ids[0], "io.kubernetes.pod.name": "not mine"},
			CdiDevices:  []*pluginapi.CDIDevice{{Name: "example.com/gpu=0"}},
		}
	}
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{1, 1})
	a := pod("a", nil, ctr("c", map[string]int64{res: 1}), ctr("plain", nil))
	ok, _, msg := n.m.Admit(a, nil)
	require.True(t, ok, msg)

	cfg := &runtimeapi.ContainerConfig{
		Envs:        []*runtimeapi.KeyValue{{Key: "SHARED", Value: []byte("container")}},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/var/data"}},
		Annotations: map[string]string{"io.kubernetes.pod.name": "a"},
	}
	require.NoError(t, n.m.ApplyDevices(context.Background(), a, &a.Spec.Containers[0], cfg))
	assert.Equal(t, []*runtimeapi.KeyValue{{Key: "GPU", Value: []byte("0")}, {Key: "SHARED", Value: []byte("plugin")}, {Key: "SHARED", Value: []byte("container")}}, cfg.Envs,
		"the plugin's variables first: the container's own win")
	assert.Equal(t, []*runtimeapi.Mount{{ContainerPath: "/dev-lib", HostPath: "/opt/gpu/lib", Readonly: true}, {ContainerPath: "/data", HostPath: "/var/data"}}, cfg.Mounts)
	assert.Equal(t, []*runtimeapi.Device{{ContainerPath: "/dev/gpu0", HostPath: "/dev/gpu0", Permissions: "rw"}}, cfg.Devices)
	assert.Equal(t, []*runtimeapi.CDIDevice{{Name: "example.com/gpu=0"}}, cfg.CDIDevices)
	assert.Equal(t, map[string]string{"io.kubernetes.pod.name": "a", "gpu.example.com/id": "0"}, cfg.Annotations)
	assert.Contains(t, p.Calls(), devicestest.PreStartContainer)

	plain := &runtimeapi.ContainerConfig{}
	require.NoError(t, n.m.ApplyDevices(context.Background(), a, &a.Spec.Containers[1], plain))
	assert.Equal(t, &runtimeapi.ContainerConfig{}, plain)

	p.Fail = func(method string) error {
		if method == devicestest.PreStartContainer {
			return errors.New("not ready")
		}
		return nil
	}
	err := n.m.ApplyDevices(context.Background(), a, &a.Spec.Containers[0], &runtimeapi.ContainerConfig{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "device plugin PreStartContainer rpc failed with err: rpc error: code = Unknown desc = not ready")
}

func TestCheckpointSurvivesARestart(t *testing.T) {
	dir := shortTempDir(t)
	a := pod("a", nil, ctr("c", map[string]int64{res: 1}))
	func() {
		first, cancel := startStoppable(t, dir)
		defer cancel()
		p := devicestest.New(res, devicestest.Healthy("0", "1")...)
		require.NoError(t, first.plugin(t, p))
		first.waitCounts(t, res, counts{2, 2})
		ok, _, msg := first.m.Admit(a, nil)
		require.True(t, ok, msg)
		p.Stop()
	}()
	info, err := os.Stat(filepath.Join(dir, devices.CheckpointName))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	n := startNode(t, dir)
	assert.Equal(t, map[string][]string{res: {"0"}}, n.m.Devices(a.UID, "c"), "the allocation is restored")
	cfg := &runtimeapi.ContainerConfig{}
	require.NoError(t, n.m.ApplyDevices(context.Background(), a, &a.Spec.Containers[0], cfg), "without its plugin")
	assert.Equal(t, []*runtimeapi.KeyValue{{Key: devicestest.DefaultEnv, Value: []byte("0")}}, cfg.Envs)
	ok, _, msg := n.m.Admit(a, nil)
	require.True(t, ok, "a running pod admitted again keeps its devices: %s", msg)
	assert.Equal(t, counts{0, 0}, n.counts(res), "registered, nothing to allocate until the plugin is back")
	n.clk.Step(devices.DefaultStopGracePeriod)
	assert.Equal(t, counts{0, 0}, n.counts(res))
}

func TestCorruptCheckpointStartsEmpty(t *testing.T) {
	dir := shortTempDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, devices.CheckpointName), []byte("{not json"), 0o600))
	n := startNode(t, dir)
	capacity, _ := n.m.Resources()
	assert.Empty(t, capacity)
}

func TestListenRemovesStaleSockets(t *testing.T) {
	dir := shortTempDir(t)
	l, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep.txt"), nil, 0o600))
	n := startNode(t, dir)
	_, err = os.Stat(filepath.Join(dir, "stale.sock"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "stale socket removed: %v", err)
	_, err = os.Stat(filepath.Join(dir, "keep.txt"))
	assert.NoError(t, err, "other files stay")
	_, err = os.Stat(n.m.SocketPath())
	assert.NoError(t, err)
}

func TestIsExtendedResourceName(t *testing.T) {
	for name, want := range map[string]bool{
		"example.com/gpu":                        true,
		"nvidia.com/gpu":                         true,
		"gpu":                                    false,
		"cpu":                                    false,
		"kubernetes.io/gpu":                      false,
		"node.kubernetes.io/x":                   false,
		"requests.example/gpu":                   false,
		"example.com/":                           false,
		"example.com/a/b":                        false,
		strings.Repeat("a", 63) + ".com/x":       true,
		"example.com/" + strings.Repeat("x", 64): false,
	} {
		assert.Equal(t, want, devices.IsExtendedResourceName(v1.ResourceName(name)), name)
	}
}

func TestRegistrationAfterRunRefused(t *testing.T) {
	dir := shortTempDir(t)
	n, stop := startStoppable(t, dir)
	stop()
	p := devicestest.New(res)
	t.Cleanup(p.Stop)
	require.NoError(t, p.Start(dir, "p.sock"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	assert.Error(t, p.Register(ctx, n.m.SocketPath(), "p.sock"))
}

func TestListenRefusesATooLongSocketPath(t *testing.T) {
	dir := filepath.Join(shortTempDir(t), strings.Repeat("d", 100))
	m, err := devices.New(devices.Options{Dir: dir})
	require.NoError(t, err)
	err = m.Listen()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "longer than the 107 bytes a unix socket's path may have")
}

func TestAllocatedCountsHeldDevices(t *testing.T) {
	n := startNode(t, "")
	require.NoError(t, n.plugin(t, devicestest.New(res, devicestest.Healthy("0", "1", "2")...)))
	n.waitCounts(t, res, counts{3, 3})
	assert.Empty(t, n.m.Allocated())
	a := pod("a", []v1.Container{ctr("init", map[string]int64{res: 1})}, ctr("c", map[string]int64{res: 1}), ctr("d", map[string]int64{res: 1}))
	ok, _, msg := n.m.Admit(a, nil)
	require.True(t, ok, msg)
	got := n.m.Allocated()[res]
	assert.Equal(t, int64(2), got.Value(), "the init container's device, reused by c, counts once")
}

// A container's allocatedResourcesStatus follows its devices' health as
// the plugin lists it, and the pods holding a device whose health changed
// are due a status update.
func TestAllocatedResourcesStatus(t *testing.T) {
	n := startNode(t, "")
	p := devicestest.New(res, devicestest.Healthy("0", "1")...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{2, 2})
	a := pod("a", []v1.Container{ctr("init", map[string]int64{res: 1})}, ctr("c", map[string]int64{res: 2}), ctr("plain", nil))
	ok, _, msg := n.m.Admit(a, nil)
	require.True(t, ok, msg)
	assert.Empty(t, n.m.TakeHealthChanges(), "nothing changed since the devices were given")

	status := func() v1.PodStatus {
		st := v1.PodStatus{
			InitContainerStatuses: []v1.ContainerStatus{{Name: "init"}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", AllocatedResourcesStatus: []v1.ResourceStatus{
				{Name: "example.com/other", Resources: []v1.ResourceHealth{{ResourceID: "x", Health: v1.ResourceHealthStatusUnknown}}},
			}}, {Name: "plain"}},
		}
		n.m.UpdateAllocatedResourcesStatus(a, &st)
		return st
	}
	health := func(h0, h1 v1.ResourceHealthStatus) v1.PodStatus {
		return v1.PodStatus{
			InitContainerStatuses: []v1.ContainerStatus{{Name: "init"}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", AllocatedResourcesStatus: []v1.ResourceStatus{
				{Name: "example.com/other", Resources: []v1.ResourceHealth{{ResourceID: "x", Health: v1.ResourceHealthStatusUnknown}}},
				{Name: res, Resources: []v1.ResourceHealth{{ResourceID: "0", Health: h0}, {ResourceID: "1", Health: h1}}},
			}}, {Name: "plain"}},
		}
	}
	assert.Equal(t, health(v1.ResourceHealthStatusHealthy, v1.ResourceHealthStatusHealthy), status(),
		"init containers get none, as upstream; other resources' entries stay")

	p.SetDevices(append(devicestest.Healthy("0"), devicestest.Unhealthy("1")...)...)
	n.waitCounts(t, res, counts{2, 1})
	assert.Equal(t, health(v1.ResourceHealthStatusHealthy, v1.ResourceHealthStatusUnhealthy), status())
	assert.Equal(t, []types.UID{"a"}, n.m.TakeHealthChanges())
	assert.Empty(t, n.m.TakeHealthChanges(), "once")

	// A plugin that goes away leaves the health it last listed, as upstream.
	p.Stop()
	n.waitCounts(t, res, counts{2, 0})
	assert.Equal(t, health(v1.ResourceHealthStatusHealthy, v1.ResourceHealthStatusUnhealthy), status())
}

// The pod-resources API's allocatable devices are the healthy ones, held
// or not, and none once the plugin has gone.
func TestAllocatableDevices(t *testing.T) {
	n := startNode(t, "")
	assert.Empty(t, n.m.AllocatableDevices(), "no plugin")
	p := devicestest.New(res, append(devicestest.Healthy("2", "0"), devicestest.Unhealthy("1")...)...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{3, 2})
	assert.Equal(t, map[string][]string{res: {"0", "2"}}, n.m.AllocatableDevices())
	p.Stop()
	n.waitCounts(t, res, counts{3, 0})
	assert.Empty(t, n.m.AllocatableDevices(), "the plugin went away")
}
