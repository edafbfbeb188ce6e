package agenttest_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/pluginmanager/pluginmanagertest"
	"github.com/kubeletkit/kubeletkit/volume"
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

// A pod's claim bound to a CSI persistent volume of a driver registered
// through the plugin registry: the node stages the volume at upstream's
// global mount path, publishes it in the pod's volume directory, and the
// pod runs; deleting the pod unpublishes, then unstages. A pod whose claim
// is Pending waits in ContainerCreating with upstream's FailedMount
// message. The stats summary has the pod's volume under its name in the
// pod, with the claim's pvcRef and the driver's NodeGetVolumeStats
// figures (the driver has GET_VOLUME_STATS).
func TestPersistentVolumeClaimOfACSIDriver(t *testing.T) {
	root, err := os.MkdirTemp("", "kk") // short: socket paths have at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	driver := fakecsi.New(fakecsi.Options{Name: "csi.example.com", NodeID: "node-1", StageUnstage: true, VolumeStats: true})
	driver.SetUsage("vol-1", &csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Total: 10 << 30, Available: 7 << 30, Used: 3 << 30},
		&csipb.VolumeUsage{Unit: csipb.VolumeUsage_INODES, Total: 1000, Available: 900, Used: 100})
	driverSock := filepath.Join(root, "plugins", "csi.example.com", "csi.sock")
	serveOutside(t, driverSock, driver.Serve)
	registrar := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "csi.example.com",
		Endpoint: driverSock, SupportedVersions: []string{"1.0.0"}})
	serveOutside(t, filepath.Join(root, "plugins_registry", "csi.example.com-reg.sock"), registrar.ServeListener)

	objects := &volume.StaticSources{}
	claim := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data", UID: "claim-uid"},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-data"},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	objects.SetPersistentVolumeClaim(claim)
	objects.SetPersistentVolumeClaim(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pending"},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}})
	objects.SetPersistentVolume(&v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-data"},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-1"}},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: "data", UID: "claim-uid"},
		},
	})
	objects.SetCSIDriver(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptrTo(false)}})
	claimPod := func(name, claim string) *v1.Pod {
		app := container("app", "sleep", "3600")
		app.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		p := pod(name, app)
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		return p
	}

	synctest.Test(t, func(t *testing.T) {
		opts := agent.Options{RootDir: root}
		opts.Cluster.VolumeSources = volume.Sources{ConfigMaps: objects, Secrets: objects, Claims: objects}
		n := agenttest.NewNode(t, agenttest.Options{Agent: opts})
		n.Step(2 * time.Second)

		n.AddPod(claimPod("with-pvc", "data"))
		waitRunning(t, n, "with-pvc")
		assert.Equal(t, []string{fakecsi.NodeGetInfo, fakecsi.NodeGetCapabilities, fakecsi.NodeStageVolume, fakecsi.NodePublishVolume}, driver.Methods())
		uid := string(n.Pod("default", "with-pvc").UID)
		staging := filepath.Join(root, "plugins", "kubernetes.io", "csi", "csi.example.com", fmt.Sprintf("%x", sha256.Sum256([]byte("vol-1"))), "globalmount")
		assert.Equal(t, map[string]string{"vol-1": staging}, driver.Staged())
		target := filepath.Join(root, "pods", uid, "volumes", "kubernetes.io~csi", "pv-data", "mount")
		assert.Equal(t, map[string]string{target: "vol-1"}, driver.Published())

		sum, err := n.Agent().API().Summary(context.Background(), false)
		require.NoError(t, err)
		var vols []statsv1alpha1.VolumeStats
		for _, p := range sum.Pods {
			if p.PodRef.Name == "with-pvc" {
				vols = p.VolumeStats
			}
		}
		if assert.Len(t, vols, 1) {
			v := vols[0]
			assert.Equal(t, "data", v.Name, "the pod's volume, not the persistent volume")
			assert.Equal(t, &statsv1alpha1.PVCReference{Name: "data", Namespace: "default"}, v.PVCRef)
			var got []uint64
			for _, f := range []*uint64{v.CapacityBytes, v.AvailableBytes, v.UsedBytes, v.Inodes, v.InodesFree, v.InodesUsed} {
				if assert.NotNil(t, f) {
					got = append(got, *f)
				}
			}
			assert.Equal(t, []uint64{10 << 30, 7 << 30, 3 << 30, 1000, 900, 100}, got, "capacity, available, used; inodes, free, used")
		}
		stats := driver.Calls()[len(driver.Calls())-1]
		assert.Equal(t, fakecsi.Call{Method: fakecsi.NodeGetVolumeStats, VolumeID: "vol-1", TargetPath: target}, stats, "at the publish target")

		n.AddPod(claimPod("pending", "pending"))
		n.Step(10 * time.Second)
		p := n.Pod("default", "pending")
		assert.Equal(t, v1.PodPending, p.Status.Phase)
		if assert.Len(t, p.Status.ContainerStatuses, 1) && assert.NotNil(t, p.Status.ContainerStatuses[0].State.Waiting) {
			assert.Equal(t, "ContainerCreating", p.Status.ContainerStatuses[0].State.Waiting.Reason)
		}
		var failed []string
		for _, e := range n.PodEvents("default", "pending") {
			if e.Reason == "FailedMount" {
				failed = append(failed, e.Message)
			}
		}
		if assert.NotEmpty(t, failed) {
			assert.Equal(t, `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: volume "data": error processing PVC default/pending: PVC is not bound`, failed[0])
		}

		calls := len(driver.Methods())
		n.DeletePod("default", "with-pvc")
		n.StepUntil(time.Minute, func() bool { return len(driver.Staged()) == 0 })
		assert.Equal(t, []string{fakecsi.NodeUnpublishVolume, fakecsi.NodeUnstageVolume}, driver.Methods()[calls:])
		assert.Empty(t, driver.Published())
		assert.NoDirExists(t, filepath.Dir(staging))
	})
}
