package memorymanager_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/memorymanager"
)

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(s), 0o644))
	}
	write("devices/system/node/node0/meminfo", "Node 0 MemTotal:        4194304 kB\nNode 0 MemFree:         1000 kB\n")
	write("devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "512\n")
	write("devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages", "1\n")
	write("devices/system/node/node1/meminfo", "Node 1 MemTotal:        2097152 kB\n")
	write("devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "0\n")
	write("devices/system/node/possible", "0-1\n")
	m, err := memorymanager.Discover(root)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, m.NUMANodes())
	assert.Equal(t, []memorymanager.NUMANode{
		{ID: 0, Memory: 4 * gi, HugePages: []memorymanager.HugePages{{PageSize: 2 * mi, Pages: 512}, {PageSize: gi, Pages: 1}}},
		{ID: 1, Memory: 2 * gi, HugePages: []memorymanager.HugePages{{PageSize: 2 * mi, Pages: 0}}},
	}, m.Nodes())
	assert.Equal(t, "hugepages-1Gi", string(m.Nodes()[0].HugePages[1].ResourceName()))

	_, err = memorymanager.Discover(t.TempDir())
	assert.ErrorContains(t, err, "no NUMA nodes under")
	write("devices/system/node/node2/meminfo", "Node 2 MemFree: 1 kB\n")
	_, err = memorymanager.Discover(root)
	assert.ErrorContains(t, err, "NUMA node 2:")
	assert.ErrorContains(t, err, "no MemTotal line")
}

func TestDiscoverHost(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/node/node0/meminfo"); err != nil {
		t.Skip("no NUMA nodes in /sys")
	}
	m, err := memorymanager.Discover("/sys")
	require.NoError(t, err)
	assert.Positive(t, m.Nodes()[0].Memory)
}

func TestNewMachineRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []memorymanager.NUMANode
		err   string
	}{
		{"no nodes", nil, "memorymanager: a machine needs at least one NUMA node"},
		{"twice", []memorymanager.NUMANode{{ID: 0, Memory: gi}, {ID: 0, Memory: gi}}, "memorymanager: NUMA node 0 given twice"},
		{"out of range", []memorymanager.NUMANode{{ID: 64, Memory: gi}}, "memorymanager: NUMA node 64: IDs go from 0 to 63"},
		{"page size twice", []memorymanager.NUMANode{{ID: 0, Memory: gi, HugePages: []memorymanager.HugePages{{PageSize: 2 * mi}, {PageSize: 2 * mi}}}},
			"memorymanager: NUMA node 0: huge page size 2097152 is zero or given twice"},
		{"pages beyond memory", []memorymanager.NUMANode{{ID: 0, Memory: gi, HugePages: []memorymanager.HugePages{{PageSize: gi, Pages: 2}}}},
			"memorymanager: NUMA node 0: huge pages of 2147483648 bytes exceed its memory of 1073741824 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memorymanager.NewMachine(tc.nodes...)
			assert.EqualError(t, err, tc.err)
		})
	}
	m, err := memorymanager.NewMachine(memorymanager.NUMANode{ID: 3, Memory: gi}, memorymanager.NUMANode{ID: 1, Memory: gi})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 3}, m.NUMANodes())
}
