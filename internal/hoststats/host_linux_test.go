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

// tree writes files (path → content) under a new temporary directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

const Gi = 1 << 30

func TestCgroupMemory(t *testing.T) {
	mi := Meminfo{Total: 8 * Gi, Free: 1 * Gi, InactiveFile: 2 * Gi, HasInactiveFile: true}
	cases := []struct {
		name    string
		files   map[string]string
		rel     string
		want    Memory
		wantErr bool
	}{
		{name: "v2 root from meminfo and memory.stat", rel: "",
			files: map[string]string{"cgroup.controllers": "memory", "memory.stat": "anon 100\ninactive_file 1073741824\npgfault 7\npgmajfault 2\n"},
			want:  Memory{Usage: 7 * Gi, InactiveFile: 1 * Gi, RSS: 100, PageFaults: 7, MajorPageFaults: 2, HasStat: true}},
		{name: "v2 root without memory.stat", rel: "",
			files: map[string]string{"cgroup.controllers": "memory"},
			want:  Memory{Usage: 7 * Gi, InactiveFile: 2 * Gi}},
		{name: "v2 child", rel: "kubepods.slice",
			files: map[string]string{"cgroup.controllers": "memory", "kubepods.slice/memory.current": "3000\n", "kubepods.slice/memory.stat": "anon 2000\ninactive_file 500\npgfault 9\n"},
			want:  Memory{Usage: 3000, InactiveFile: 500, RSS: 2000, PageFaults: 9, HasStat: true}},
		{name: "v2 child missing", rel: "kubepods.slice", files: map[string]string{"cgroup.controllers": "memory"}, wantErr: true},
		{name: "v2 child bad number", rel: "k", files: map[string]string{"cgroup.controllers": "memory", "k/memory.current": "max\n"}, wantErr: true},
		{name: "v1 root", rel: "",
			files: map[string]string{"memory/memory.usage_in_bytes": "6000\n", "memory/memory.stat": "rss 1\ntotal_rss 4000\ntotal_inactive_file 1000\ntotal_pgfault 30\ntotal_pgmajfault 3\n"},
			want:  Memory{Usage: 6000, InactiveFile: 1000, RSS: 4000, PageFaults: 30, MajorPageFaults: 3, HasStat: true}},
		{name: "v1 without memory controller", rel: "", files: map[string]string{".keep": ""},
			want: Memory{Usage: 7 * Gi, InactiveFile: 2 * Gi}},
		{name: "v1 child without memory.stat", rel: "kubepods", files: map[string]string{"memory/kubepods/memory.usage_in_bytes": "5\n"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Host{CgroupRoot: tree(t, tc.files)}
			got, err := h.CgroupMemory(tc.rel, mi)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCgroupMemoryLimit(t *testing.T) {
	cases := []struct {
		name   string
		files  map[string]string
		want   uint64
		wantOK bool
	}{
		{name: "v2 limit", files: map[string]string{"cgroup.controllers": "", "k/memory.max": "4096\n"}, want: 4096, wantOK: true},
		{name: "v2 max", files: map[string]string{"cgroup.controllers": "", "k/memory.max": "max\n"}},
		{name: "v1 limit", files: map[string]string{"memory/k/memory.limit_in_bytes": "8192\n"}, want: 8192, wantOK: true},
		{name: "v1 unlimited", files: map[string]string{"memory/k/memory.limit_in_bytes": "9223372036854771712\n"}},
		{name: "missing", files: map[string]string{".keep": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Host{CgroupRoot: tree(t, tc.files)}.CgroupMemoryLimit("k")
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCgroupCPU(t *testing.T) {
	procStat := "cpu  100 0 100 5000 0 0 0 0 0 0\nbtime 1700000000\n" // 200 ticks busy = 2s
	cases := []struct {
		name    string
		cgroup  map[string]string
		rel     string
		want    uint64
		wantErr bool
	}{
		{name: "v2 root", cgroup: map[string]string{"cgroup.controllers": "", "cpu.stat": "usage_usec 1500\nuser_usec 1000\n"}, want: 1500_000},
		{name: "v2 root without cpu.stat falls back to /proc/stat", cgroup: map[string]string{"cgroup.controllers": ""}, want: 2 * uint64(time.Second)},
		{name: "v2 child", rel: "kubepods.slice", cgroup: map[string]string{"cgroup.controllers": "", "kubepods.slice/cpu.stat": "usage_usec 7\n"}, want: 7000},
		{name: "v2 child without usage", rel: "k", cgroup: map[string]string{"cgroup.controllers": "", "k/cpu.stat": "nr_periods 0\n"}, wantErr: true},
		{name: "v1 cpuacct", cgroup: map[string]string{"cpuacct/cpuacct.usage": "123456789\n"}, want: 123456789},
		{name: "v1 cpu,cpuacct child", rel: "kubepods", cgroup: map[string]string{"cpu,cpuacct/kubepods/cpuacct.usage": "42\n"}, want: 42},
		{name: "v1 root without cpuacct", cgroup: map[string]string{".keep": ""}, want: 2 * uint64(time.Second)},
		{name: "v1 child missing", rel: "kubepods", cgroup: map[string]string{".keep": ""}, wantErr: true},
	}
	proc := tree(t, map[string]string{"stat": procStat})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Host{ProcRoot: proc, CgroupRoot: tree(t, tc.cgroup)}
			got, err := h.CgroupCPU(tc.rel)
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPIDsAndNetDev(t *testing.T) {
	eth := func(rx string) string { return netDevHeader + "  eth0: " + rx + " 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n" }
	proc := tree(t, map[string]string{
		"sys/kernel/pid_max": "4194304\n", "sys/kernel/threads-max": "126000\n", "loadavg": "0.1 0.2 0.3 2/345 678\n",
		"1/net/dev": eth("100"), "net/dev": eth("999"),
	})
	h := Host{ProcRoot: proc}
	maxPID, running, err := h.PIDs()
	require.NoError(t, err)
	assert.Equal(t, uint64(126000), maxPID, "the lower of pid_max and threads-max")
	assert.Equal(t, uint64(345), running)

	ifs, err := h.NetDev()
	require.NoError(t, err)
	assert.Equal(t, []Interface{{Name: "eth0", RxBytes: 100, RxPackets: 1, TxBytes: 5, TxPackets: 1}}, ifs, "PID 1's namespace, the host's")
	require.NoError(t, os.RemoveAll(filepath.Join(proc, "1")))
	ifs, err = h.NetDev()
	require.NoError(t, err)
	assert.Equal(t, uint64(999), ifs[0].RxBytes, "the caller's namespace when PID 1's cannot be read")

	_, _, err = Host{ProcRoot: t.TempDir()}.PIDs()
	assert.ErrorContains(t, err, "pid limit")
}

func TestCgroupStartTime(t *testing.T) {
	boot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, v2 := range []bool{false, true} {
		files := map[string]string{"memory/kubepods/cgroup.clone_children": "0", "cpu/kubepods/cgroup.clone_children": "0"}
		dirs := []string{"memory/kubepods", "cpu/kubepods"}
		file := "cgroup.clone_children"
		if v2 {
			files = map[string]string{"cgroup.controllers": "", "kubepods/cgroup.events": "populated 1\n"}
			dirs, file = []string{"kubepods"}, "cgroup.events"
		}
		root := tree(t, files)
		h := Host{CgroupRoot: root}
		created := boot.Add(time.Hour)
		for _, d := range dirs {
			require.NoError(t, os.Chtimes(filepath.Join(root, d), created.Add(time.Hour), created.Add(time.Hour)), "a directory touched by a child")
			require.NoError(t, os.Chtimes(filepath.Join(root, d, file), created, created))
		}
		assert.True(t, h.CgroupStartTime("kubepods", boot).Equal(created), "v2=%v: the oldest time", v2)
		assert.True(t, h.CgroupStartTime("kubepods", boot.Add(2*time.Hour)).Equal(boot.Add(2*time.Hour)), "v2=%v: never before boot", v2)
		assert.True(t, h.CgroupStartTime("missing", boot).IsZero(), "v2=%v", v2)
	}
}

func TestDiskUsage(t *testing.T) {
	dir := tree(t, map[string]string{"a": string(make([]byte, 8192)), "sub/b": string(make([]byte, 8192))})
	require.NoError(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "a-link")))
	outside := tree(t, map[string]string{"big": string(make([]byte, 1<<20))})
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))

	bytes, inodes := DiskUsage(dir)
	assert.Equal(t, uint64(5), inodes, "dir, a (once for its two links), sub, sub/b, the symlink")
	assert.GreaterOrEqual(t, bytes, uint64(16384))
	assert.Less(t, bytes, uint64(1<<20), "the symlink is not followed")

	fb, fi := DiskUsage(filepath.Join(dir, "a"))
	assert.Equal(t, uint64(1), fi)
	assert.GreaterOrEqual(t, fb, uint64(8192))

	mb, mi := DiskUsage(filepath.Join(dir, "missing"))
	assert.Zero(t, mb)
	assert.Zero(t, mi)
}

func TestFilesystemHelpers(t *testing.T) {
	dir := t.TempDir()
	fs, err := Statfs(dir)
	require.NoError(t, err)
	assert.Positive(t, fs.CapacityBytes)
	assert.LessOrEqual(t, fs.AvailableBytes, fs.CapacityBytes)
	assert.LessOrEqual(t, fs.UsedBytes, fs.CapacityBytes)
	_, err = Statfs(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "statfs")

	assert.Equal(t, dir, ExistingParent(filepath.Join(dir, "a", "b")))
	assert.True(t, SameDevice(dir, filepath.Join(dir, "missing")), "unknown counts as the same")
	assert.True(t, SameDevice(dir, dir))
	_, err = Device(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}

// TestRealHost reads this machine's files and checks only that the figures
// are plausible.
func TestRealHost(t *testing.T) {
	h := Host{ProcRoot: "/proc", CgroupRoot: "/sys/fs/cgroup"}
	cpu, err := h.CgroupCPU("")
	require.NoError(t, err)
	assert.Positive(t, cpu)
	mi, err := h.Meminfo()
	require.NoError(t, err)
	m, err := h.CgroupMemory("", mi)
	require.NoError(t, err)
	assert.Positive(t, WorkingSet(m.Usage, m.InactiveFile))
	ps, err := h.ProcStat()
	require.NoError(t, err)
	assert.True(t, ps.BootTime.Before(time.Now()))
	assert.True(t, ps.BootTime.After(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)))
	_, err = h.NetDev()
	require.NoError(t, err)
}

// The node's pressure comes from /proc/pressure, a cgroup's from its v2
// files; without them (an old kernel, psi=0, cgroup v1) an error that
// says the file does not exist.
func TestPressureFiles(t *testing.T) {
	line := "some avg10=2.00 avg60=1.00 avg300=0.50 total=300\nfull avg10=1.00 avg60=0.50 avg300=0.25 total=100\n"
	want := Pressure{Some: PressureData{Avg10: 2, Avg60: 1, Avg300: 0.5, Total: 300}, Full: PressureData{Avg10: 1, Avg60: 0.5, Avg300: 0.25, Total: 100}}
	v2 := tree(t, map[string]string{"proc/pressure/io": line, "cgroup/cgroup.controllers": "cpu io memory",
		"cgroup/kubepods.slice/memory.pressure": line, "cgroup/kubepods.slice/cpu.pressure": "garbage"})
	h := Host{ProcRoot: filepath.Join(v2, "proc"), CgroupRoot: filepath.Join(v2, "cgroup")}
	got, err := h.ProcPressure("io")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = h.ProcPressure("cpu")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	got, err = h.CgroupPressure("kubepods.slice", "memory")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = h.CgroupPressure("kubepods.slice", "cpu")
	assert.ErrorContains(t, err, `kubepods.slice/cpu.pressure: parse pressure: no "some" line`)
	_, err = h.CgroupPressure("kubepods.slice", "io")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	v1 := tree(t, map[string]string{"cgroup/memory/kubepods/memory.pressure": line})
	_, err = Host{CgroupRoot: filepath.Join(v1, "cgroup")}.CgroupPressure("kubepods", "memory")
	assert.ErrorIs(t, err, fs.ErrNotExist, "cgroup v1 has no pressure files")
}
