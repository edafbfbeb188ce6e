package hoststats

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sample cgroups: a Burstable pod with a CPU limit and its container,
// on cgroup v1 (cgroupfs driver) and v2 (systemd driver).
const (
	v1Pod       = "kubepods/burstable/pod0c1f"
	v1Container = v1Pod + "/5f0e9a"
	v2Pod       = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0c1f.slice"
	v2Container = v2Pod + "/cri-containerd-5f0e9a.scope"
)

func sample(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "cgroup", path))
	require.NoError(t, err)
	return data
}

func TestParseCFS(t *testing.T) {
	cases := []struct {
		name    string
		in      []byte
		want    CFS
		wantErr string
	}{
		{name: "v1 throttled_time in ns", in: sample(t, "v1/cpu/"+v1Pod+"/cpu.stat"),
			want: CFS{Periods: 22, ThrottledPeriods: 6, ThrottledTime: 269391007 * time.Nanosecond}},
		{name: "v2 throttled_usec in µs", in: sample(t, "v2/"+v2Pod+"/cpu.stat"),
			want: CFS{Periods: 35, ThrottledPeriods: 4, ThrottledTime: 120500 * time.Microsecond}},
		{name: "v2 never throttled", in: sample(t, "v2/"+v2Container+"/cpu.stat"), want: CFS{}},
		{name: "throttled time saturates", in: []byte("nr_periods 1\nthrottled_usec 18446744073709551615\n"),
			want: CFS{Periods: 1, ThrottledTime: time.Duration(1<<63 - 1)}},
		{name: "no CFS counters (usage only)", in: []byte("usage_usec 10\n"), wantErr: "no nr_periods"},
		{name: "not a number", in: []byte("nr_periods x\n"), wantErr: "cpu.stat: parse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCFS(tc.in)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseCPUQuota(t *testing.T) {
	cases := []struct {
		name    string
		in      []byte
		want    bool
		wantErr string
	}{
		{name: "v1 quota", in: sample(t, "v1/cpu/"+v1Pod+"/cpu.cfs_quota_us"), want: true},
		{name: "v1 none", in: sample(t, "v1/cpu/"+v1Container+"/cpu.cfs_quota_us")},
		{name: "v2 quota", in: sample(t, "v2/"+v2Pod+"/cpu.max"), want: true},
		{name: "v2 none", in: sample(t, "v2/"+v2Container+"/cpu.max")},
		{name: "zero is none", in: []byte("0\n")},
		{name: "empty", in: []byte("\n"), wantErr: "bad content"},
		{name: "three fields", in: []byte("1 2 3"), wantErr: "bad content"},
		{name: "not a number", in: []byte("lots 100000"), wantErr: "cpu quota: strconv"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCPUQuota(tc.in)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMemoryCache(t *testing.T) {
	stat := func(path string) map[string]uint64 {
		kv, err := ParseKeyValues(sample(t, path))
		require.NoError(t, err)
		return kv
	}
	cases := []struct {
		name          string
		stat          map[string]uint64
		v2, hierarchy bool
		want          uint64
		wantOK        bool
	}{
		{name: "v2 file", stat: stat("v2/" + v2Pod + "/memory.stat"), v2: true, want: 4096, wantOK: true},
		{name: "v1 total_cache", stat: stat("v1/memory/" + v1Container + "/memory.stat"), hierarchy: true, want: 12288, wantOK: true},
		{name: "v1 without hierarchy: cache", stat: stat("v1/memory/" + v1Container + "/memory.stat"), want: 8192, wantOK: true},
		{name: "v2 without file", stat: map[string]uint64{"anon": 1}, v2: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := MemoryCache(tc.stat, tc.v2, tc.hierarchy)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// sampleDevices are the sample pod's I/O: the disk (254:0) and a loop
// device.
func sampleDevices(v1 bool) []DeviceIO {
	disk := DeviceIO{Major: 254, Minor: 0, Bytes: map[string]uint64{"Read": 1228800, "Write": 49152},
		Ops: map[string]uint64{"Read": 30, "Write": 12}}
	loop := DeviceIO{Major: 7, Minor: 3, Bytes: map[string]uint64{"Read": 4096, "Write": 0}, Ops: map[string]uint64{"Read": 1, "Write": 0}}
	if v1 {
		disk.Bytes["Sync"], disk.Bytes["Async"], disk.Bytes["Discard"], disk.Bytes["Total"] = 1261568, 16384, 0, 1277952
		disk.Ops["Sync"], disk.Ops["Async"], disk.Ops["Discard"], disk.Ops["Total"] = 40, 2, 0, 42
		loop.Bytes["Sync"], loop.Bytes["Async"], loop.Bytes["Discard"], loop.Bytes["Total"] = 4096, 0, 0, 4096
		loop.Ops["Sync"], loop.Ops["Async"], loop.Ops["Discard"], loop.Ops["Total"] = 1, 0, 0, 1
	}
	return []DeviceIO{loop, disk}
}

func TestParseIOStat(t *testing.T) {
	cases := []struct {
		name    string
		in      []byte
		want    []DeviceIO
		wantErr string
	}{
		{name: "pod", in: sample(t, "v2/"+v2Pod+"/io.stat"), want: sampleDevices(false)},
		{name: "no I/O", in: sample(t, "v2/"+v2Container+"/io.stat")},
		{name: "only other keys", in: []byte("8:0 dbytes=1 dios=1 cost.usage=5\n"), want: []DeviceIO{{Major: 8}}},
		{name: "key without value skipped", in: []byte("8:0 rbytes\n"), want: []DeviceIO{{Major: 8}}},
		{name: "device twice merged", in: []byte("8:0 rbytes=1\n8:0 wios=2\n"),
			want: []DeviceIO{{Major: 8, Bytes: map[string]uint64{"Read": 1}, Ops: map[string]uint64{"Write": 2}}}},
		{name: "bad device", in: []byte("sda rbytes=1\n"), wantErr: `device "sda" is not major:minor`},
		{name: "bad minor", in: []byte("8:x rbytes=1\n"), wantErr: `device "8:x"`},
		{name: "bad value", in: []byte("8:0 rbytes=-1\n"), wantErr: "8:0 rbytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseIOStat(tc.in)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseBlkio(t *testing.T) {
	ops, err := ParseBlkio(nil, sample(t, "v1/blkio/"+v1Pod+"/blkio.throttle.io_serviced_recursive"), BlkioOps)
	require.NoError(t, err)
	both, err := ParseBlkio(ops, sample(t, "v1/blkio/"+v1Pod+"/blkio.throttle.io_service_bytes_recursive"), BlkioBytes)
	require.NoError(t, err)
	assert.Equal(t, sampleDevices(true), both, "operations and bytes of each device, sorted")
	assert.Nil(t, ops[0].Bytes, "the devices given are not changed")

	cases := []struct {
		name    string
		in      string
		want    []DeviceIO
		wantErr string
	}{
		{name: "no I/O", in: "Total 0\n"},
		{name: "empty", in: ""},
		{name: "short line", in: "8:0 Read\n", wantErr: "bad line"},
		{name: "long line", in: "8:0 Read 1 2\n", wantErr: "bad line"},
		{name: "bad device", in: "8-0 Read 1\n", wantErr: "not major:minor"},
		{name: "bad value", in: "8:0 Read x\n", wantErr: "8:0 Read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBlkio(nil, []byte(tc.in), BlkioBytes)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseNetDevPackets(t *testing.T) {
	ifs, err := ParseNetDev(sample(t, "netdev"))
	require.NoError(t, err)
	assert.Equal(t, []Interface{{Name: "eth0", RxBytes: 17532, RxPackets: 203, RxDropped: 3, TxBytes: 9604, TxPackets: 117, TxDropped: 1}}, ifs)
}

// The fuzzers: any input parses or fails without a panic.

func FuzzParseCFS(f *testing.F) {
	for _, p := range []string{"v1/cpu/" + v1Pod + "/cpu.stat", "v2/" + v2Pod + "/cpu.stat"} {
		data, err := os.ReadFile(filepath.Join("testdata", "cgroup", p))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("nr_periods 1\nthrottled_usec 18446744073709551615\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if c, err := ParseCFS(data); err == nil && c.ThrottledTime < 0 {
			t.Fatalf("negative throttled time %v", c.ThrottledTime)
		}
		_, _ = ParseCPUQuota(data)
	})
}

func FuzzParseIOStat(f *testing.F) {
	for _, p := range []string{"v2/" + v2Pod + "/io.stat", "v2/" + v2Container + "/io.stat"} {
		data, err := os.ReadFile(filepath.Join("testdata", "cgroup", p))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte("8:0 rbytes=1\n8:0 wios=2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseIOStat(data)
		if err != nil {
			return
		}
		for i := 1; i < len(d); i++ {
			if d[i-1].Major > d[i].Major || d[i-1].Major == d[i].Major && d[i-1].Minor >= d[i].Minor {
				t.Fatalf("devices not sorted and unique: %v", d)
			}
		}
	})
}

func FuzzParseBlkio(f *testing.F) {
	for _, p := range []string{"v1/blkio/" + v1Pod + "/blkio.throttle.io_serviced_recursive",
		"v1/blkio/" + v1Pod + "/blkio.throttle.io_service_bytes_recursive", "v1/blkio/" + v1Pod + "/blkio.bfq.io_serviced_recursive"} {
		data, err := os.ReadFile(filepath.Join("testdata", "cgroup", p))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := ParseBlkio(nil, data, BlkioOps)
		if err != nil {
			return
		}
		both, err := ParseBlkio(ops, data, BlkioBytes)
		if err != nil || len(both) != len(ops) {
			t.Fatalf("the same file as bytes: %v, %d devices for %d", err, len(both), len(ops))
		}
	})
}

func FuzzParseNetDev(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "cgroup", "netdev"))
	require.NoError(f, err)
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		ifs, err := ParseNetDev(data)
		if err != nil {
			return
		}
		for _, i := range ifs {
			if Ignored(i.Name) {
				t.Fatalf("ignored interface %q kept", i.Name)
			}
		}
	})
}
