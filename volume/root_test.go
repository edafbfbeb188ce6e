//go:build root

package volume_test

// Tests that mount tmpfs for real; they need root (CAP_SYS_ADMIN):
//
//	go test -tags root -race ./volume/...

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/volume"
)

// mountLine returns the /proc/self/mounts line of target, or "".
func mountLine(t *testing.T, target string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[1] == target {
			return l
		}
	}
	return ""
}

func TestRootTmpfs(t *testing.T) {
	require.Equal(t, 0, os.Geteuid(), "the root tests run as root")
	h := newHarness(t, func(o *volume.Options) { o.Mounter = nil }).run() // the real mounter
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"password": []byte("hunter2")}})
	pod := newPod("p",
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("16Mi"))}}},
		v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr(int32(0o400))}}},
	)
	require.NoError(t, h.mount(pod))
	mem, err := filepath.EvalSymlinks(h.volDir(pod, volume.EmptyDirPluginName, "mem"))
	require.NoError(t, err)
	sec, err := filepath.EvalSymlinks(h.volDir(pod, volume.SecretPluginName, "sec"))
	require.NoError(t, err)

	l := mountLine(t, mem)
	require.NotEmpty(t, l, "emptyDir medium Memory is a tmpfs")
	assert.Contains(t, l, "tmpfs")
	assert.Contains(t, l, "size=16384k")
	assert.Contains(t, l, "nosuid")
	assert.Contains(t, l, "nodev")
	require.NotEmpty(t, mountLine(t, sec), "secrets are on a tmpfs")
	assert.Equal(t, "hunter2", readFile(t, filepath.Join(sec, "password")))
	fi, err := os.Stat(filepath.Join(sec, "password"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), fi.Mode().Perm())

	// A restarted manager finds the mounts and does not mount again.
	h.stop()
	h2 := newHarness(t, func(o *volume.Options) {
		o.RootDir, o.Mounter = h.root, nil
		o.Sources = volume.Sources{Secrets: h.src}
	})
	h2.root = h.root
	h2.run()
	require.NoError(t, h2.mount(pod))
	assert.Equal(t, 1, strings.Count(mountsText(t), mem+" "), "mounted once")

	require.NoError(t, h2.unmount(pod))
	assert.Empty(t, mountLine(t, mem))
	assert.Empty(t, mountLine(t, sec))
	assert.False(t, exists(mem))
	assert.False(t, exists(sec))
}

func mountsText(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/mounts")
	require.NoError(t, err)
	return string(b)
}
