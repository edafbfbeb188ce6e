package volume

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadConsistently(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reads   []string // what each read returns; "!" fails
		want    string
		wantErr string
		calls   int
	}{
		{name: "two equal reads", reads: []string{"a", "a"}, want: "a", calls: 2},
		{name: "a torn read is read again", reads: []string{"a", "ab", "ab"}, want: "ab", calls: 3},
		{name: "settles late", reads: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "9"}, want: "9", calls: 10},
		{name: "never settles", reads: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}, wantErr: "/proc/self/mountinfo changed on each of 10 reads", calls: 10},
		{name: "first read fails", reads: []string{"!"}, wantErr: "boom", calls: 1},
		{name: "a later read fails", reads: []string{"a", "!"}, wantErr: "boom", calls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			got, err := readConsistently("/proc/self/mountinfo", func(string) ([]byte, error) {
				r := tc.reads[calls]
				calls++
				if r == "!" {
					return nil, errors.New("boom")
				}
				return []byte(r), nil
			})
			assert.Equal(t, tc.calls, calls)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func TestSysMounterIsMountPoint(t *testing.T) {
	m := sysMounter{}
	ok, err := m.IsMountPoint("/proc")
	require.NoError(t, err)
	assert.True(t, ok, "/proc is a mount point")
	ok, err = m.IsMountPoint(t.TempDir())
	require.NoError(t, err)
	assert.False(t, ok)
}
