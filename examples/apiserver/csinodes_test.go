package apiserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/volume"
)

// The CSI drivers of a node on the API server, as upstream's node info
// manager records them: the CSINode owned by the Node with an entry per
// driver, the Node's node-ID annotation and topology labels; a driver
// going takes its entry and annotation, not its labels.
func TestCSINodes(t *testing.T) {
	ctx := context.Background()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid", Labels: map[string]string{"kubernetes.io/hostname": "n1"}}}
	client := fake.NewClientset(node)
	c := apiserver.NewCSINodes(client, "n1")

	require.NoError(t, c.Ensure(ctx))
	cn, err := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}}, cn.OwnerReferences)
	assert.Empty(t, cn.Spec.Drivers)

	require.NoError(t, c.InstallCSIDriver(ctx, volume.CSIDriver{Name: "csi.example.com", NodeID: "vol-node-1", MaxVolumes: 16,
		Topology: map[string]string{"topology.example.com/zone": "z1", "topology.example.com/rack": "r7"}}))
	require.NoError(t, c.InstallCSIDriver(ctx, volume.CSIDriver{Name: "nfs.example.com", NodeID: "n1"}))
	cn, err = client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []storagev1.CSINodeDriver{
		{Name: "csi.example.com", NodeID: "vol-node-1", TopologyKeys: []string{"topology.example.com/rack", "topology.example.com/zone"},
			Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](16)}},
		{Name: "nfs.example.com", NodeID: "n1"},
	}, cn.Spec.Drivers)
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"csi.example.com":"vol-node-1","nfs.example.com":"n1"}`, n.Annotations[apiserver.NodeIDAnnotation])
	assert.Equal(t, "z1", n.Labels["topology.example.com/zone"])
	assert.Equal(t, "r7", n.Labels["topology.example.com/rack"])

	err = c.InstallCSIDriver(ctx, volume.CSIDriver{Name: "other.example.com", NodeID: "x", Topology: map[string]string{"topology.example.com/zone": "z2"}})
	assert.ErrorContains(t, err, `detected topology value collision: driver reported "topology.example.com/zone":"z2" but existing label is "topology.example.com/zone":"z1"`)

	require.NoError(t, c.UninstallCSIDriver(ctx, "csi.example.com"))
	cn, err = client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, cn.Spec.Drivers, 1)
	assert.Equal(t, "nfs.example.com", cn.Spec.Drivers[0].Name)
	n, err = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"nfs.example.com":"n1"}`, n.Annotations[apiserver.NodeIDAnnotation])
	assert.Equal(t, "z1", n.Labels["topology.example.com/zone"], "labels stay, as upstream's")

	require.NoError(t, c.UninstallCSIDriver(ctx, "nfs.example.com"))
	n, err = client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, n.Annotations, apiserver.NodeIDAnnotation)
}

// Without its Node, the CSINode cannot be made (the Node owns it).
func TestCSINodesNeedTheNode(t *testing.T) {
	c := apiserver.NewCSINodes(fake.NewClientset(), "n1")
	assert.Error(t, c.Ensure(context.Background()))
}
