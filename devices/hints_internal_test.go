package devices

import (
	"testing"

	"github.com/stretchr/testify/assert"

	tm "github.com/kubeletkit/kubeletkit/topologymanager"
)

// deviceHints, upstream's hint generation, over one and two NUMA nodes.
func TestDeviceHints(t *testing.T) {
	pref := func(nodes ...int) tm.Hint { return tm.Hint{NUMANodes: tm.NewMask(nodes...), Preferred: true} }
	not := func(nodes ...int) tm.Hint { return tm.Hint{NUMANodes: tm.NewMask(nodes...)} }
	// a and b on node 0, c and d on node 1.
	twoNodes := map[string][]int{"a": {0}, "b": {0}, "c": {1}, "d": {1}}
	for _, tc := range []struct {
		name      string
		nodes     []int
		numa      map[string][]int
		available []string
		reusable  []string
		request   int
		want      []tm.Hint
	}{
		{"one node", []int{0}, map[string][]int{"a": {0}, "b": {0}}, []string{"a", "b"}, nil, 1, []tm.Hint{pref(0)}},
		{"one node, as many as there are", []int{0}, map[string][]int{"a": {0}, "b": {0}}, []string{"a", "b"}, nil, 2, []tm.Hint{pref(0)}},
		{"two nodes, one device: either node", []int{0, 1}, twoNodes, []string{"a", "b", "c", "d"}, nil, 1,
			[]tm.Hint{pref(0), pref(1), not(0, 1)}},
		{"two nodes, two devices free on node 1 only", []int{0, 1}, twoNodes, []string{"a", "c", "d"}, nil, 2,
			[]tm.Hint{pref(1), not(0, 1)}},
		{"two nodes, one free on each: both, not preferred as one node holds two", []int{0, 1}, twoNodes, []string{"a", "c"}, nil, 2,
			[]tm.Hint{not(0, 1)}},
		{"three devices span both nodes: preferred", []int{0, 1}, twoNodes, []string{"a", "b", "c", "d"}, nil, 3,
			[]tm.Hint{pref(0, 1)}},
		{"not enough devices", []int{0, 1}, twoNodes, []string{"a", "c"}, nil, 3, []tm.Hint{}},
		{"a reusable device's node is in every hint", []int{0, 1}, twoNodes, []string{"c", "d"}, []string{"a"}, 1,
			[]tm.Hint{pref(0), not(0, 1)}},
		{"reusable and available together", []int{0, 1}, twoNodes, []string{"c"}, []string{"a"}, 2,
			[]tm.Hint{not(0, 1)}},
		{"a device on both nodes counts for each", []int{0, 1}, map[string][]int{"ab": {0, 1}}, []string{"ab"}, nil, 1,
			[]tm.Hint{pref(0), pref(1), not(0, 1)}},
		{"a free device without a node counts for no set", []int{0, 1}, map[string][]int{"a": {0}}, []string{"a", "x"}, nil, 2,
			[]tm.Hint{}},
		{"a reusable device without a node is skipped", []int{0, 1}, map[string][]int{"c": {1}}, []string{"c"}, []string{"x"}, 1,
			[]tm.Hint{pref(1), not(0, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, deviceHints(tc.nodes, tc.numa, tc.available, tc.reusable, tc.request))
		})
	}
}

// filterByAffinity splits the free devices as upstream's does.
func TestFilterByAffinity(t *testing.T) {
	numa := map[string][]int{"a": {0}, "b": {0}, "c": {1}, "ab": {0, 1}}
	available := []string{"a", "ab", "b", "c", "x"}
	for _, tc := range []struct {
		name                       string
		affinity                   tm.Mask
		numa                       map[string][]int
		aligned, unaligned, noNode []string
	}{
		{"node 1", tm.NewMask(1), numa, []string{"ab", "c"}, []string{"a", "b"}, []string{"x"}},
		{"node 0", tm.NewMask(0), numa, []string{"a", "ab", "b"}, []string{"c"}, []string{"x"}},
		{"no affinity: all without order", 0, numa, nil, nil, available},
		{"no device has a node", tm.NewMask(0), map[string][]int{}, nil, nil, available},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aligned, unaligned, noNode := filterByAffinity(tc.affinity, tc.numa, available)
			assert.Equal(t, tc.aligned, aligned, "aligned")
			assert.Equal(t, tc.unaligned, unaligned, "unaligned")
			assert.Equal(t, tc.noNode, noNode, "without a node")
		})
	}
}
