package agenttest_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/pluginmanager/pluginmanagertest"
	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
)

// serveOutside serves on a unix socket at path until the test ends, from
// a goroutine outside the test's synctest bubble (a server blocked in
// accept is not durably blocked, so inside one it would keep the node
// from ever settling).
func serveOutside(t *testing.T, path string, serve func(ctx context.Context, l net.Listener) error) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
}

// A CSI driver registers with the node as upstream's do: its
// node-driver-registrar puts a socket in <root-dir>/plugins_registry
// that names the driver's node service; the node registers it (asking
// NodeGetInfo) and tells the registrar; then a pod's inline CSI volume
// of that driver is published by it and the pod runs. Without the plugin
// registry the volume waits with FailedMount, its driver not found.
func TestCSIDriverRegistersThroughThePluginRegistry(t *testing.T) {
	root, err := os.MkdirTemp("", "kk") // short: socket paths have at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	driver := fakecsi.New(fakecsi.Options{Name: "csi.example.com", NodeID: "node-1"})
	driverSock := filepath.Join(root, "plugins", "csi.example.com", "csi.sock")
	serveOutside(t, driverSock, driver.Serve)
	registrar := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "csi.example.com",
		Endpoint: driverSock, SupportedVersions: []string{"1.0.0"}})
	serveOutside(t, filepath.Join(root, "plugins_registry", "csi.example.com-reg.sock"), registrar.ServeListener)

	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: root}})
		n.Step(2 * time.Second)
		if st := registrar.Statuses(); assert.Len(t, st, 1) {
			assert.True(t, st[0].PluginRegistered, st[0].Error)
		}
		app := container("app", "sleep", "3600")
		app.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		p := pod("with-csi", app)
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "csi.example.com"}}}}
		n.AddPod(p)
		waitRunning(t, n, "with-csi")
		assert.Equal(t, []string{fakecsi.NodeGetInfo, fakecsi.NodeGetCapabilities, fakecsi.NodePublishVolume}, driver.Methods())
		assert.Len(t, driver.Published(), 1)
	})
}
