package hoststats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMeminfo(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Meminfo
		wantErr string
	}{
		{name: "full", in: "MemTotal:  1000 kB\nMemFree: 200 kB\nInactive(file): 50 kB\nHugePages_Total: 0\n",
			want: Meminfo{Total: 1024000, Free: 204800, InactiveFile: 51200, HasInactiveFile: true}},
		{name: "no inactive file", in: "MemTotal: 1000 kB\nMemFree: 200 kB\n", want: Meminfo{Total: 1024000, Free: 204800}},
		{name: "no total", in: "MemFree: 200 kB\n", wantErr: "no MemTotal"},
		{name: "no free", in: "MemTotal: 1000 kB\n", wantErr: "no MemFree"},
		{name: "free above total", in: "MemTotal: 1000 kB\nMemFree: 2000 kB\n", wantErr: "MemFree 2048000 above MemTotal 1024000"},
		{name: "garbage number", in: "MemTotal: lots kB\n", wantErr: `parse "MemTotal: lots kB"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMeminfo([]byte(tc.in))
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseSmallFiles(t *testing.T) {
	n, err := ParseLoadavgThreads([]byte("0.52 0.58 0.59 3/1234 56789\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1234), n)
	for _, bad := range []string{"", "1 2 3", "1 2 3 4 5", "1 2 3 4/x 5"} {
		_, err := ParseLoadavgThreads([]byte(bad))
		assert.Error(t, err, bad)
	}
	v, err := ParseUint([]byte("4194304\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(4194304), v)
	_, err = ParseUint([]byte("max\n"))
	assert.Error(t, err)
	assert.Equal(t, uint64(0), WorkingSet(5, 10))
	assert.Equal(t, uint64(3), WorkingSet(5, 2))
}

func TestSafeNames(t *testing.T) {
	for _, s := range []string{"a", "uid-1", "my.vol", "kubernetes.io~empty-dir"} {
		assert.True(t, SafeName(s), s)
	}
	for _, s := range []string{"", ".", "..", "a/b", "../x", "a\x00b", `a\b`} {
		assert.False(t, SafeName(s), s)
	}
	assert.True(t, SafeRelPath("kubepods.slice/burstable"))
	for _, s := range []string{"", "/kubepods", "../kubepods", "a/../../b"} {
		assert.False(t, SafeRelPath(s), s)
	}
}

func TestParseProcStat(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    ProcStat
		wantErr string
	}{
		// busy = user 100 + nice 20 + system 30 + irq 4 + softirq 5 + steal 1 = 160 ticks = 1.6s;
		// idle 1000 and iowait 50 are not counted, nor guest (already in user).
		{name: "full", in: "cpu  100 20 30 1000 50 4 5 1 7 0\ncpu0 50 10 15 500 25 2 2 1 3 0\nintr 1 2\nbtime 1700000000\nprocesses 10\n",
			want: ProcStat{BusyNanoseconds: 1600 * uint64(time.Millisecond), BootTime: time.Unix(1700000000, 0)}},
		// An old kernel without steal and guest columns.
		{name: "old kernel", in: "cpu 1 2 3 4 5 6 7\nbtime 5\n", want: ProcStat{BusyNanoseconds: 19 * 10 * uint64(time.Millisecond), BootTime: time.Unix(5, 0)}},
		{name: "no cpu", in: "btime 5\n", wantErr: "no cpu line"},
		{name: "no btime", in: "cpu 1 2 3 4 5\n", wantErr: "no btime line"},
		{name: "short cpu", in: "cpu 1 2\nbtime 5\n", wantErr: "short cpu line"},
		{name: "garbage", in: "cpu 1 x 3 4 5\nbtime 5\n", wantErr: "cpu line"},
		{name: "bad btime", in: "cpu 1 2 3 4 5\nbtime soon\n", wantErr: "btime"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProcStat([]byte(tc.in))
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

const netDevHeader = "Inter-|   Receive                                                |  Transmit\n" +
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"

func TestParseNetDev(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []Interface
		wantErr string
	}{
		{name: "interfaces", in: netDevHeader +
			"    lo: 900 9 0 0 0 0 0 0 900 9 0 0 0 0 0 0\n" +
			"  eth0: 1000 10 1 7 0 0 0 0 2000 20 2 8 0 0 0 0\n" +
			"vethab12: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n" +
			"docker0: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n" +
			"nerdctl0: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n" +
			"  ens4:3000 30 3 0 0 0 0 0 4000 40 4 0 0 0 0 0\n",
			want: []Interface{
				{Name: "eth0", RxBytes: 1000, RxPackets: 10, RxErrors: 1, RxDropped: 7, TxBytes: 2000, TxPackets: 20, TxErrors: 2, TxDropped: 8},
				{Name: "ens4", RxBytes: 3000, RxPackets: 30, RxErrors: 3, TxBytes: 4000, TxPackets: 40, TxErrors: 4},
			}},
		{name: "only loopback", in: netDevHeader + "    lo: 900 9 0 0 0 0 0 0 900 9 0 0 0 0 0 0\n"},
		{name: "no header", in: "", wantErr: "no header"},
		{name: "short line", in: netDevHeader + "  eth0: 1 2 3\n", wantErr: "bad line"},
		{name: "bad number", in: netDevHeader + "  eth0: 1000 10 1 0 0 0 0 0 x 20 2 0 0 0 0 0\n", wantErr: "net dev: eth0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNetDev([]byte(tc.in))
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseKeyValues(t *testing.T) {
	kv, err := ParseKeyValues([]byte("usage_usec 1500\nuser_usec 1000\n\nnr_periods 0\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"usage_usec": 1500, "user_usec": 1000, "nr_periods": 0}, kv)
	_, err = ParseKeyValues([]byte("usage_usec -1\n"))
	assert.ErrorContains(t, err, `parse "usage_usec -1"`)
}
