package devices_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kubeletkit/kubeletkit/devices/devicestest"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// onNUMA lists healthy devices, each on the NUMA node given after its ID.
func onNUMA(pairs ...any) []*pluginapi.Device {
	var out []*pluginapi.Device
	for i := 0; i < len(pairs); i += 2 {
		d := &pluginapi.Device{ID: pairs[i].(string), Health: pluginapi.Healthy}
		if n := pairs[i+1].(int); n >= 0 {
			d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(n)}}}
		}
		out = append(out, d)
	}
	return out
}

// The topology hints of a container's devices, on two NUMA nodes: the
// nodes that hold them, preferred when as few nodes as could hold that
// many devices; a device without a NUMA node gives no hint.
func TestContainerHints(t *testing.T) {
	n := startNodeWithNUMA(t, 0, 1)
	p := devicestest.New(res, onNUMA("a", 0, "b", 0, "c", 1, "d", 1)...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{4, 4})

	one := pod("one", nil, ctr("c", map[string]int64{res: 2}))
	ok, reason, msg := n.m.Admit(one, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	got := n.m.ContainerHints(one, &one.Spec.Containers[0])[res]
	assert.Equal(t, []topologymanager.Hint{{NUMANodes: topologymanager.NewMask(0), Preferred: true},
		{NUMANodes: topologymanager.NewMask(0, 1)}}, got, "a and b, both on node 0")
	assert.Equal(t, got, n.m.PodHints(one)[res])
	assert.Equal(t, []int{0}, n.m.NUMANodes(res, "a"))

	// Three devices must span both nodes (one is no longer active, its
	// devices released at this admission): both, preferred, as no single
	// node has three.
	wide := pod("wide", nil, ctr("c", map[string]int64{res: 3}))
	ok, reason, msg = n.m.Admit(wide, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	assert.Equal(t, []topologymanager.Hint{{NUMANodes: topologymanager.NewMask(0, 1), Preferred: true}},
		n.m.ContainerHints(wide, &wide.Spec.Containers[0])[res])

	// A container without devices gives no hint.
	plain := pod("plain", nil, ctr("c", nil))
	assert.Nil(t, n.m.ContainerHints(plain, &plain.Spec.Containers[0]))
}

// Devices whose plugin lists no NUMA node give no hint for their resource
// (nil: any node), and a manager that knows no NUMA nodes gives none at all.
func TestContainerHintsWithoutTopology(t *testing.T) {
	n := startNodeWithNUMA(t, 0, 1)
	p := devicestest.New(res, onNUMA("a", -1, "b", 0)...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{2, 2})
	both := pod("both", nil, ctr("c", map[string]int64{res: 2}))
	ok, reason, msg := n.m.Admit(both, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	hints := n.m.ContainerHints(both, &both.Spec.Containers[0])
	require.Contains(t, hints, res)
	assert.Nil(t, hints[res])

	plainNode := startNode(t, "")
	q := devicestest.New(res, onNUMA("a", 0)...)
	require.NoError(t, plainNode.plugin(t, q))
	plainNode.waitCounts(t, res, counts{1, 1})
	one := pod("one", nil, ctr("c", map[string]int64{res: 1}))
	ok, _, _ = plainNode.m.Admit(one, nil)
	require.True(t, ok)
	assert.Nil(t, plainNode.m.ContainerHints(one, &one.Spec.Containers[0]))
}
