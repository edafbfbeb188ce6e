//go:build linux

package hoststats

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCgroupReaders reads the sample pod and container cgroups on v1 and
// v2 as a /metrics/cadvisor scrape does.
func TestCgroupReaders(t *testing.T) {
	cases := []struct {
		name           string
		root           string
		pod, container string
		podCFS         CFS
		podCache       uint64
		containerCache uint64
		podIO          []DeviceIO
	}{
		{name: "v1", root: "testdata/cgroup/v1", pod: v1Pod, container: v1Container,
			podCFS: CFS{Periods: 22, ThrottledPeriods: 6, ThrottledTime: 269391007}, podCache: 4096, containerCache: 12288,
			podIO: sampleDevices(true)},
		{name: "v2", root: "testdata/cgroup/v2", pod: v2Pod, container: v2Container,
			podCFS: CFS{Periods: 35, ThrottledPeriods: 4, ThrottledTime: 120500 * time.Microsecond}, podCache: 4096, containerCache: 4096,
			podIO: sampleDevices(false)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Host{CgroupRoot: tc.root}
			cfs, ok, err := h.CgroupCFS(tc.pod)
			require.NoError(t, err)
			assert.True(t, ok, "the pod sets a CPU quota")
			assert.Equal(t, tc.podCFS, cfs)
			_, ok, err = h.CgroupCFS(tc.container)
			require.NoError(t, err)
			assert.False(t, ok, "the container sets none: no CFS figures")

			cache, err := h.CgroupMemoryCache(tc.pod)
			require.NoError(t, err)
			assert.Equal(t, tc.podCache, cache)
			cache, err = h.CgroupMemoryCache(tc.container)
			require.NoError(t, err)
			assert.Equal(t, tc.containerCache, cache)

			io, err := h.CgroupIO(tc.pod)
			require.NoError(t, err)
			assert.Equal(t, tc.podIO, io)
			io, err = h.CgroupIO(tc.container)
			require.NoError(t, err)
			assert.Empty(t, io, "no I/O accounted")

			children, err := h.CgroupChildren(tc.pod)
			require.NoError(t, err)
			assert.Equal(t, []string{filepath.Base(tc.container)}, children)
			procs, err := h.CgroupProcs(tc.pod)
			require.NoError(t, err)
			assert.Empty(t, procs)
			procs, err = h.CgroupProcs(tc.container)
			require.NoError(t, err)
			assert.Equal(t, 4242, procs[0])

			_, _, err = h.CgroupCFS("kubepods/gone")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			_, err = h.CgroupMemoryCache("kubepods/gone")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			_, err = h.CgroupIO("kubepods/gone")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		})
	}
}

func TestCgroupReadersMalformed(t *testing.T) {
	v1 := tree(t, map[string]string{
		"cpu/p/cpu.cfs_quota_us": "lots\n", "cpu/q/cpu.cfs_quota_us": "1000\n", "cpu/q/cpu.stat": "nr_periods x\n",
		"memory/p/memory.stat": "rss 1\n", "memory/q/memory.stat": "cache 5\ntotal_cache 7\n", "memory/q/memory.use_hierarchy": "0\n",
		"blkio/p/blkio.throttle.io_serviced_recursive": "8:0 Read 1\n",
		"blkio/q/blkio.throttle.io_serviced_recursive": "8:0 Read 1\n", "blkio/q/blkio.throttle.io_service_bytes_recursive": "8:0 Read\n",
		"blkio/r/blkio.throttle.io_serviced_recursive": "Total 0\n", "blkio/r/blkio.throttle.io_serviced": "8:0 Write 2\n",
		"blkio/r/blkio.throttle.io_service_bytes": "8:0 Write 512\n",
	})
	h := Host{CgroupRoot: v1}
	_, _, err := h.CgroupCFS("p")
	assert.ErrorContains(t, err, "cpu.cfs_quota_us: cpu quota")
	_, _, err = h.CgroupCFS("q")
	assert.ErrorContains(t, err, "cpu.stat: cpu.stat: parse")
	_, err = h.CgroupMemoryCache("p")
	assert.ErrorContains(t, err, "no page cache figure")
	cache, err := h.CgroupMemoryCache("q")
	require.NoError(t, err)
	assert.Equal(t, uint64(5), cache, "use_hierarchy 0: the cgroup's own cache")
	_, err = h.CgroupIO("p")
	assert.ErrorIs(t, err, fs.ErrNotExist, "operations without bytes")
	_, err = h.CgroupIO("q")
	assert.ErrorContains(t, err, "bad line")
	io, err := h.CgroupIO("r")
	require.NoError(t, err)
	assert.Equal(t, []DeviceIO{{Major: 8, Bytes: map[string]uint64{"Write": 512}, Ops: map[string]uint64{"Write": 2}}}, io,
		"the throttling policy's own files when the recursive ones are empty")
}

func TestProcNetDevAndBlockDevice(t *testing.T) {
	data, err := os.ReadFile("testdata/cgroup/netdev")
	require.NoError(t, err)
	proc := tree(t, map[string]string{"4242/net/dev": string(data)})
	h := Host{ProcRoot: proc}
	ifs, err := h.ProcNetDev(4242)
	require.NoError(t, err)
	assert.Equal(t, "eth0", ifs[0].Name)
	assert.Equal(t, uint64(203), ifs[0].RxPackets)
	_, err = h.ProcNetDev(1)
	assert.ErrorIs(t, err, fs.ErrNotExist)

	sys := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(sys, "dev", "block"), 0o755))
	require.NoError(t, os.Symlink("../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda", filepath.Join(sys, "dev", "block", "254:0")))
	h.SysRoot = sys
	assert.Equal(t, "/dev/vda", h.BlockDevice(254, 0))
	assert.Empty(t, h.BlockDevice(7, 3), "unknown device")
	assert.Empty(t, Host{}.BlockDevice(254, 0), "no sysfs")
}
