package hoststats_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

func TestParseSELinuxEnabled(t *testing.T) {
	const (
		plain   = "22 1 253:0 / / rw - ext4 /dev/vda1 rw\n23 22 0:21 / /sys rw - sysfs sysfs rw\n"
		withFS  = plain + "24 23 0:22 / /sys/fs/selinux rw - selinuxfs selinuxfs rw\n"
		context = "system_u:system_r:kernel_t:s0\x00"
	)
	for _, tc := range []struct {
		name               string
		mountinfo, current string
		want               bool
	}{
		{"selinuxfs and a label", withFS, context, true},
		{"a label with a newline", withFS, "unconfined_u:unconfined_r:unconfined_t:s0\n", true},
		{"no selinuxfs", plain, context, false},
		{"built in but disabled", withFS, "kernel\x00", false},
		{"no label", withFS, "", false},
		{"a mount point named selinuxfs is not the type", "24 23 0:22 / /selinuxfs rw - tmpfs tmpfs rw\n", context, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, hoststats.ParseSELinuxEnabled([]byte(tc.mountinfo), []byte(tc.current)))
		})
	}
}

func TestSELinuxEnabledReadsProc(t *testing.T) {
	proc := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(proc, "self", "attr"), 0o755))
	assert.False(t, hoststats.SELinuxEnabled(proc), "no files")
	require.NoError(t, os.WriteFile(filepath.Join(proc, "self", "mountinfo"), []byte("24 23 0:22 / /sys/fs/selinux rw - selinuxfs selinuxfs rw\n"), 0o644))
	assert.False(t, hoststats.SELinuxEnabled(proc), "no attr/current")
	require.NoError(t, os.WriteFile(filepath.Join(proc, "self", "attr", "current"), []byte("system_u:system_r:kernel_t:s0"), 0o644))
	assert.True(t, hoststats.SELinuxEnabled(proc))
}
