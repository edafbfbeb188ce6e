package volume

import (
	"errors"
	"os"
	"path/filepath"
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

func TestSeclabeled(t *testing.T) {
	const table = `22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,seclabel
23 22 0:21 / /sys rw,nosuid shared:2 - sysfs sysfs rw
24 22 0:30 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount rw shared:3 - nfs4 server:/x rw,vers=4.2
25 22 0:31 / /var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/w/mount rw shared:4 - xfs /dev/vdb rw,seclabel,attr2
26 22 0:32 / /mnt/with\040space rw - tmpfs tmpfs rw
27 22 0:33 / /mnt/over rw - tmpfs tmpfs rw,seclabel
28 22 0:34 / /mnt/over rw - tmpfs tmpfs rw
`
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/", true},
		{"/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/e", true},  // on the root's ext4
		{"/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount", false}, // nfs without labels
		{"/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/v/mount/sub", false},
		{"/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/w/mount", true},
		{"/var/lib/kubelet/pods/u/volumes/kubernetes.io~csi/w/mountx", true}, // not under w/mount: the root's
		{"/sys/fs", false},
		{"/mnt/with space/a", false},
		{"/mnt/over", false}, // the last mount on a point hides the one below
	} {
		assert.Equal(t, tc.want, seclabeled([]byte(table), tc.path), tc.path)
	}
}

func TestSupportsSELinuxReadsThisHost(t *testing.T) {
	// Whatever this host's SELinux, the answer for a directory is the
	// answer seclabeled gives for its mount table.
	dir := t.TempDir()
	got, err := sysMounter{}.SupportsSELinux(dir)
	require.NoError(t, err)
	table, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, seclabeled(table, real), got)
	_, err = sysMounter{}.SupportsSELinux(filepath.Join(dir, "missing"))
	assert.Error(t, err)
}
