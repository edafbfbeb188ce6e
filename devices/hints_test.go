package devices_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kubeletkit/kubeletkit/devices"
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

// The topology hints come from the free devices, as upstream's: before
// admission every node that has enough free devices; after it, the nodes
// of the devices a container holds; an empty list when too few are free.
func TestContainerHints(t *testing.T) {
	n := startNodeWithNUMA(t, 0, 1)
	p := devicestest.New(res, onNUMA("a", 0, "b", 0, "c", 1, "d", 1)...)
	require.NoError(t, n.plugin(t, p))
	n.waitCounts(t, res, counts{4, 4})
	pref := func(nodes ...int) topologymanager.Hint {
		return topologymanager.Hint{NUMANodes: topologymanager.NewMask(nodes...), Preferred: true}
	}
	not := func(nodes ...int) topologymanager.Hint {
		return topologymanager.Hint{NUMANodes: topologymanager.NewMask(nodes...)}
	}

	one := pod("one", nil, ctr("c", map[string]int64{res: 2}))
	assert.Equal(t, []topologymanager.Hint{pref(0), pref(1), not(0, 1)}, n.m.ContainerHints(one, &one.Spec.Containers[0])[res],
		"two free devices on each node")
	ok, reason, msg := n.m.Admit(one, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	assert.Equal(t, []topologymanager.Hint{pref(0), not(0, 1)}, n.m.ContainerHints(one, &one.Spec.Containers[0])[res],
		"a and b, which it holds, on node 0")
	assert.Equal(t, n.m.ContainerHints(one, &one.Spec.Containers[0]), n.m.PodHints(one))
	assert.Equal(t, []int{0}, n.m.NUMANodes(res, "a"))

	two := pod("two", nil, ctr("c", map[string]int64{res: 2}))
	assert.Equal(t, []topologymanager.Hint{pref(1), not(0, 1)}, n.m.ContainerHints(two, &two.Spec.Containers[0])[res],
		"only c and d are free")
	wide := pod("wide", nil, ctr("c", map[string]int64{res: 3}))
	assert.Equal(t, []topologymanager.Hint{}, n.m.ContainerHints(wide, &wide.Spec.Containers[0])[res], "two free: cannot satisfy")
	assert.Equal(t, []topologymanager.Hint{}, n.m.PodHints(wide)[res])

	// A pod of two containers asks for the sum at pod scope.
	pair := pod("pair", nil, ctr("x", map[string]int64{res: 1}), ctr("y", map[string]int64{res: 1}))
	assert.Equal(t, []topologymanager.Hint{pref(1), not(0, 1)}, n.m.PodHints(pair)[res])

	// A container without devices gives no hint.
	plain := pod("plain", nil, ctr("c", nil))
	assert.Nil(t, n.m.ContainerHints(plain, &plain.Spec.Containers[0]))
}

// A regular init container's device goes on to the app container: the
// app container's hints hold its node.
func TestContainerHintsReuseInitDevices(t *testing.T) {
	n := startNodeWithNUMA(t, 0, 1)
	require.NoError(t, n.plugin(t, devicestest.New(res, onNUMA("a", 0, "c", 1)...)))
	n.waitCounts(t, res, counts{2, 2})
	p := pod("p", []v1.Container{ctr("init", map[string]int64{res: 1})}, ctr("app", map[string]int64{res: 1}))
	n.m.Prepare(p, nil)
	require.NoError(t, n.m.Allocate(p, &p.Spec.InitContainers[0]))
	require.Equal(t, []string{"a"}, n.m.Devices(p.UID, "init")[res])
	assert.Equal(t, []topologymanager.Hint{{NUMANodes: topologymanager.NewMask(0), Preferred: true}, {NUMANodes: topologymanager.NewMask(0, 1)}},
		n.m.ContainerHints(p, &p.Spec.Containers[0])[res])
	require.NoError(t, n.m.Allocate(p, &p.Spec.Containers[0]))
	assert.Equal(t, []string{"a"}, n.m.Devices(p.UID, "app")[res], "the init container's device")
}

// Devices whose plugin lists no NUMA node give no hint for their resource
// (nil: any node); a device without a node among devices with one counts
// for no set of nodes, as upstream counts it; a manager that knows no NUMA
// nodes gives no hints at all.
func TestContainerHintsWithoutTopology(t *testing.T) {
	n := startNodeWithNUMA(t, 0, 1)
	require.NoError(t, n.plugin(t, devicestest.New(res, onNUMA("a", -1, "b", -1)...)))
	n.waitCounts(t, res, counts{2, 2})
	both := pod("both", nil, ctr("c", map[string]int64{res: 2}))
	hints := n.m.ContainerHints(both, &both.Spec.Containers[0])
	require.Contains(t, hints, res)
	assert.Nil(t, hints[res])

	mixed := startNodeWithNUMA(t, 0, 1)
	require.NoError(t, mixed.plugin(t, devicestest.New(res, onNUMA("a", -1, "b", 0)...)))
	mixed.waitCounts(t, res, counts{2, 2})
	assert.Equal(t, []topologymanager.Hint{}, mixed.m.ContainerHints(both, &both.Spec.Containers[0])[res])
	one := pod("one", nil, ctr("c", map[string]int64{res: 1}))
	assert.Equal(t, []topologymanager.Hint{{NUMANodes: topologymanager.NewMask(0), Preferred: true}, {NUMANodes: topologymanager.NewMask(0, 1)}},
		mixed.m.ContainerHints(one, &one.Spec.Containers[0])[res])

	plainNode := startNode(t, "")
	q := devicestest.New(res, onNUMA("a", 0)...)
	require.NoError(t, plainNode.plugin(t, q))
	plainNode.waitCounts(t, res, counts{1, 1})
	assert.Nil(t, plainNode.m.ContainerHints(one, &one.Spec.Containers[0]))
}

// affinity is a topologymanager.Store answering one mask for every
// container.
type affinity topologymanager.Mask

func (a affinity) Affinity(types.UID, string) topologymanager.Hint {
	return topologymanager.Hint{NUMANodes: topologymanager.Mask(a), Preferred: true}
}

var _ topologymanager.Store = affinity(0)

// Allocate takes devices from the container's affinity first, as
// upstream's: aligned ones (the plugin's preferred among them when more
// are free than needed), then the others, then those without a node.
func TestAllocateWithAffinity(t *testing.T) {
	for _, tc := range []struct {
		name     string
		affinity topologymanager.Mask
		request  int64
		prefer   []string // the plugin's preferred choice; nil: it offers none
		want     []string
	}{
		{"no affinity: by ID", 0, 1, nil, []string{"a"}},
		{"node 1", topologymanager.NewMask(1), 1, nil, []string{"c"}},
		{"node 1, both of its devices", topologymanager.NewMask(1), 2, nil, []string{"c", "d"}},
		{"node 1, then another node's", topologymanager.NewMask(1), 3, nil, []string{"a", "c", "d"}},
		{"then those without a node", topologymanager.NewMask(1), 5, nil, []string{"a", "b", "c", "d", "x"}},
		{"the plugin's preferred among the aligned", topologymanager.NewMask(0), 1, []string{"c", "b"}, []string{"b"}},
		{"all aligned, then the plugin's preferred", topologymanager.NewMask(1), 3, []string{"x", "a"}, []string{"c", "d", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNodeWith(t, devices.Options{NUMANodes: []int{0, 1}, Affinity: affinity(tc.affinity)})
			p := devicestest.New(res, onNUMA("a", 0, "b", 0, "c", 1, "d", 1, "x", -1)...)
			if tc.prefer != nil {
				p.Options = &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}
				p.Prefer = func(*pluginapi.ContainerPreferredAllocationRequest) []string { return tc.prefer }
			}
			require.NoError(t, n.plugin(t, p))
			n.waitCounts(t, res, counts{5, 5})
			a := pod("a", nil, ctr("c", map[string]int64{res: tc.request}))
			n.m.Prepare(a, nil)
			require.NoError(t, n.m.Allocate(a, &a.Spec.Containers[0]))
			assert.Equal(t, tc.want, n.m.Devices(a.UID, "c")[res])
		})
	}
}

// hintsOnly is a hint provider that allows only the given NUMA node for
// cpu, as a CPU manager whose other node's CPUs are taken.
type hintsOnly int

func (h hintsOnly) ContainerHints(*v1.Pod, *v1.Container) map[string][]topologymanager.Hint {
	return map[string][]topologymanager.Hint{"cpu": {{NUMANodes: topologymanager.NewMask(int(h)), Preferred: true}}}
}
func (h hintsOnly) PodHints(pod *v1.Pod) map[string][]topologymanager.Hint {
	return h.ContainerHints(pod, nil)
}
func (hintsOnly) Allocate(*v1.Pod, *v1.Container) error { return nil }

// Driven by the topology manager, the device comes from the merged
// affinity: a free device on each node, another provider that can only
// use node 1, so the device of node 1. A plugin that fails Allocate
// refuses the pod with upstream's reason and message, and the pod holds
// nothing once the caller releases it.
func TestTopologyManagerDrivesAllocation(t *testing.T) {
	for _, scope := range []string{topologymanager.ScopeContainer, topologymanager.ScopePod} {
		t.Run(scope, func(t *testing.T) {
			topo, err := topologymanager.New(topologymanager.Options{Policy: topologymanager.PolicySingleNumaNode, Scope: scope, NUMANodes: []int{0, 1}})
			require.NoError(t, err)
			n := startNodeWith(t, devices.Options{NUMANodes: []int{0, 1}, Affinity: topo})
			topo.AddHintProvider(n.m)
			topo.AddHintProvider(hintsOnly(1))
			p := devicestest.New(res, onNUMA("a", 0, "c", 1)...)
			fail := false
			p.Fail = func(method string) error {
				if fail && method == devicestest.Allocate {
					return errors.New("no")
				}
				return nil
			}
			require.NoError(t, n.plugin(t, p))
			n.waitCounts(t, res, counts{2, 2})

			a := pod("a", nil, ctr("c", map[string]int64{res: 1}))
			n.m.Prepare(a, nil)
			ok, reason, msg := topo.Admit(a, nil)
			require.True(t, ok, "%s: %s", reason, msg)
			assert.Equal(t, []string{"c"}, n.m.Devices(a.UID, "c")[res])

			fail = true
			b := pod("b", nil, ctr("c", map[string]int64{res: 1}))
			n.m.Prepare(b, []*v1.Pod{a})
			ok, reason, msg = topo.Admit(b, []*v1.Pod{a})
			assert.False(t, ok)
			assert.Equal(t, topologymanager.ReasonTopologyAffinityError, reason, "only a's node-0 device is left: %s", msg)

			n.m.Prepare(b, nil) // a is gone: its device is free again
			ok, reason, msg = topo.Admit(b, nil)
			assert.False(t, ok)
			assert.Equal(t, devices.ReasonUnexpectedAdmissionError, reason)
			assert.Equal(t, "Allocate failed due to rpc error: code = Unknown desc = no, which is unexpected", msg)
			n.m.RemovePod(b.UID)
			assert.Nil(t, n.m.Devices(b.UID, "c"))
			assert.Equal(t, v1.ResourceList{}, n.m.Allocated())
		})
	}
}

// A held device's NUMA nodes are kept in the checkpoint: a restarted
// manager reports them before the plugin lists its devices again, and the
// plugin's listing from then on.
func TestNUMANodesSurviveARestart(t *testing.T) {
	dir := shortTempDir(t)
	a := pod("a", nil, ctr("c", map[string]int64{res: 1}))
	func() {
		first, stop := startStoppableWith(t, devices.Options{Dir: dir, NUMANodes: []int{0, 1}})
		defer stop()
		p := devicestest.New(res, onNUMA("g", 1)...)
		require.NoError(t, first.plugin(t, p))
		first.waitCounts(t, res, counts{1, 1})
		ok, _, msg := first.m.Admit(a, nil)
		require.True(t, ok, msg)
		p.Stop()
	}()
	n := startNodeWith(t, devices.Options{Dir: dir, NUMANodes: []int{0, 1}})
	assert.Equal(t, []int{1}, n.m.NUMANodes(res, "g"), "from the checkpoint")
	require.NoError(t, n.plugin(t, devicestest.New(res, onNUMA("g", 0)...)))
	n.waitCounts(t, res, counts{1, 1})
	assert.Equal(t, []int{0}, n.m.NUMANodes(res, "g"), "as the plugin lists it now")
}
