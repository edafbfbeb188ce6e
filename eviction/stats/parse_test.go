package stats

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMeminfo(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    meminfo
		wantErr string
	}{
		{name: "full", in: "MemTotal:  1000 kB\nMemFree: 200 kB\nInactive(file): 50 kB\nHugePages_Total: 0\n",
			want: meminfo{total: 1024000, free: 204800, inactiveFile: 51200, hasInactiveFile: true}},
		{name: "no inactive file", in: "MemTotal: 1000 kB\nMemFree: 200 kB\n", want: meminfo{total: 1024000, free: 204800}},
		{name: "no total", in: "MemFree: 200 kB\n", wantErr: "no MemTotal"},
		{name: "no free", in: "MemTotal: 1000 kB\n", wantErr: "no MemFree"},
		{name: "free above total", in: "MemTotal: 1000 kB\nMemFree: 2000 kB\n", wantErr: "MemFree 2048000 above MemTotal 1024000"},
		{name: "garbage number", in: "MemTotal: lots kB\n", wantErr: `parse "MemTotal: lots kB"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMeminfo([]byte(tc.in))
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
	n, err := parseLoadavgThreads([]byte("0.52 0.58 0.59 3/1234 56789\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1234), n)
	for _, bad := range []string{"", "1 2 3", "1 2 3 4 5", "1 2 3 4/x 5"} {
		_, err := parseLoadavgThreads([]byte(bad))
		assert.Error(t, err, bad)
	}
	v, err := parseUint([]byte("4194304\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(4194304), v)
	_, err = parseUint([]byte("max\n"))
	assert.Error(t, err)
	assert.Equal(t, uint64(0), workingSet(5, 10))
	assert.Equal(t, uint64(3), workingSet(5, 2))
}

func TestSafeNames(t *testing.T) {
	for _, s := range []string{"a", "uid-1", "my.vol", "kubernetes.io~empty-dir"} {
		assert.True(t, safeName(s), s)
	}
	for _, s := range []string{"", ".", "..", "a/b", "../x", "a\x00b", `a\b`} {
		assert.False(t, safeName(s), s)
	}
	assert.True(t, safeRelPath("kubepods.slice/burstable"))
	for _, s := range []string{"", "/kubepods", "../kubepods", "a/../../b"} {
		assert.False(t, safeRelPath(s), s)
	}
}
