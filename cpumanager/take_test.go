package cpumanager_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/cpumanager"
)

// singleSocketHT: 1 socket, 4 cores, 2 threads: siblings (0,4) (1,5) (2,6) (3,7).
// dualSocketHT: 2 sockets of 3 cores, 2 threads: socket 0 is 0-2,6-8; socket 1 is 3-5,9-11.
func topo(t testing.TB, sockets, cores, threads, numa int) *cpumanager.Topology {
	t.Helper()
	tp, err := cpumanager.NewTopology(sockets, cores, threads, numa)
	require.NoError(t, err)
	return tp
}

func TestTake(t *testing.T) {
	single := topo(t, 1, 4, 2, 1)
	dual := topo(t, 2, 3, 2, 1)
	for _, tc := range []struct {
		name      string
		topo      *cpumanager.Topology
		available cpuset.CPUSet
		n         int
		want      string
		err       string
	}{
		{name: "more than available", topo: single, available: cpuset.New(0, 2, 4, 6), n: 5,
			err: "not enough cpus available to satisfy request: requested=5, available=4"},
		{name: "zero", topo: single, available: single.All(), n: 0, want: ""},
		{name: "one from a free machine", topo: single, available: single.All(), n: 1, want: "0"},
		{name: "one: a split core first", topo: single, available: cpuset.New(1, 3, 5, 6, 7), n: 1, want: "6"},
		{name: "two: a whole core", topo: single, available: single.All(), n: 2, want: "0,4"},
		{name: "two: a whole core rather than two halves", topo: single, available: cpuset.New(0, 2, 3, 6, 7), n: 2, want: "2,6"},
		{name: "three: a whole core, then the thread of a split core", topo: single, available: cpuset.New(1, 2, 3, 5, 6), n: 3, want: "1,3,5"},
		{name: "a whole socket", topo: dual, available: dual.All(), n: 6, want: "0-2,6-8"},
		{name: "a whole socket, the free one", topo: dual, available: cpuset.New(1, 2, 3, 4, 5, 7, 8, 9, 10, 11), n: 6, want: "3-5,9-11"},
		{name: "cores from the fuller socket", topo: dual, available: cpuset.New(1, 2, 3, 4, 5, 7, 8, 9, 10, 11), n: 4, want: "1-2,7-8"},
		{name: "a socket and a core", topo: dual, available: dual.All(), n: 8, want: "0-3,6-9"},
		{name: "everything", topo: dual, available: dual.All(), n: 12, want: "0-11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cpumanager.Take(tc.topo, tc.available, tc.n)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

func TestTakeAligned(t *testing.T) {
	// 2 sockets, 1 NUMA node each: node 0 has 0-2,6-8, node 1 has 3-5,9-11.
	dual := topo(t, 2, 3, 2, 1)
	got, err := cpumanager.TakeAligned(dual, dual.All(), 2, []int{1})
	require.NoError(t, err)
	assert.Equal(t, "3,9", got.String())
	// More than the node has: the node's free CPUs, then the rest.
	got, err = cpumanager.TakeAligned(dual, cpuset.New(0, 1, 2, 6, 7, 8, 3, 9), 4, []int{1})
	require.NoError(t, err)
	assert.Equal(t, "0,3,6,9", got.String())
}

func TestNewTopology(t *testing.T) {
	tp := topo(t, 2, 4, 2, 2)
	assert.Equal(t, 16, tp.NumCPUs())
	assert.Equal(t, 8, tp.NumCores())
	assert.Equal(t, 2, tp.NumSockets())
	assert.Equal(t, []int{0, 1, 2, 3}, tp.NUMANodes())
	assert.Equal(t, 2, tp.CPUsPerCore())
	assert.Equal(t, 8, tp.CPUsPerSocket())
	assert.Equal(t, "0-1,8-9", tp.CPUsInNUMANodes(0).String())
	assert.Equal(t, []int{0, 3}, tp.NUMANodesOf(cpuset.New(0, 7)))
	_, err := cpumanager.NewTopology(1, 3, 1, 2)
	assert.Error(t, err)
	_, err = cpumanager.FromCPUs([]cpumanager.CPU{{ID: 0}, {ID: 0}})
	assert.Error(t, err)
	_, err = cpumanager.FromCPUs([]cpumanager.CPU{{ID: 0, Core: 0, Socket: 0}, {ID: 1, Core: 0, Socket: 1}})
	assert.Error(t, err)
}

func BenchmarkTake(b *testing.B) {
	for _, size := range []struct {
		name                    string
		sockets, cores, threads int
	}{{"cpus=16", 2, 4, 2}, {"cpus=128", 2, 32, 2}} {
		b.Run(size.name, func(b *testing.B) {
			tp := topo(b, size.sockets, size.cores, size.threads, 1)
			all := tp.All()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cpumanager.Take(tp, all, 5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
