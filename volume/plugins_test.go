package volume_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/volume"
)

func TestEmptyDir(t *testing.T) {
	h := newHarness(t, nil).run()
	pod := newPod("p",
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("64Mi"))}}},
	)
	require.NoError(t, h.mount(pod))

	cache := h.volDir(pod, volume.EmptyDirPluginName, "cache")
	assert.Equal(t, filepath.Join(h.root, "pods", "uid-p", "volumes", "kubernetes.io~empty-dir", "cache"), cache)
	fi, err := os.Stat(cache)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, fs.FileMode(0o777), fi.Mode().Perm())
	require.NoError(t, os.WriteFile(filepath.Join(cache, "data"), []byte("x"), 0o644))

	mem := h.volDir(pod, volume.EmptyDirPluginName, "mem")
	mounted := h.mnt.Mounted()
	require.Contains(t, mounted, mem)
	assert.Equal(t, "tmpfs", mounted[mem].FSType)
	assert.Equal(t, []string{"size=67108864"}, mounted[mem].Options)

	require.NoError(t, h.unmount(pod))
	assert.False(t, exists(cache), "emptyDir data removed with the pod")
	assert.Empty(t, h.mnt.Mounted(), "tmpfs unmounted")
	waitFor(t, "the pod directory to be removed", func() bool { return !exists(volume.PodDir(h.root, pod.UID)) })
}

func TestEmptyDirMemoryMountRefused(t *testing.T) {
	h := newHarness(t, nil).run()
	h.mnt.SetMountErr(fs.ErrPermission)
	pod := newPod("p", v1.Volume{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}})
	ok := newPod("ok", v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})

	require.NoError(t, h.mount(ok), "another pod proceeds")
	err := h.failMount(pod)
	assert.ErrorIs(t, err, fs.ErrPermission)
	ev := h.rec.Events()[0]
	assert.Equal(t, "Warning", ev.Type)
	assert.Equal(t, volume.EventFailedMount, ev.Reason)
	assert.Equal(t, `MountVolume.SetUp failed for volume "mem" : mount tmpfs needs CAP_SYS_ADMIN: permission denied`, ev.Message)
}

func TestHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()

	for _, tc := range []struct {
		name    string
		path    string
		typ     v1.HostPathType
		wantErr string
		check   func(t *testing.T)
	}{
		{name: "unset, missing path", path: filepath.Join(dir, "missing"), typ: v1.HostPathUnset},
		{name: "directory", path: dir, typ: v1.HostPathDirectory},
		{name: "directory, is a file", path: file, typ: v1.HostPathDirectory, wantErr: "hostPath type check failed: " + file + " is not a directory"},
		{name: "directory, missing", path: filepath.Join(dir, "nope"), typ: v1.HostPathDirectory, wantErr: "is not a directory"},
		{name: "directory or create", path: filepath.Join(dir, "new", "sub"), typ: v1.HostPathDirectoryOrCreate, check: func(t *testing.T) {
			fi, err := os.Stat(filepath.Join(dir, "new", "sub"))
			require.NoError(t, err)
			assert.True(t, fi.IsDir())
		}},
		{name: "directory or create, is a file", path: file, typ: v1.HostPathDirectoryOrCreate, wantErr: "is not a directory"},
		{name: "file", path: file, typ: v1.HostPathFile},
		{name: "file, is a directory", path: dir, typ: v1.HostPathFile, wantErr: "hostPath type check failed: " + dir + " is not a file"},
		{name: "file or create", path: filepath.Join(dir, "d2", "f"), typ: v1.HostPathFileOrCreate, check: func(t *testing.T) {
			fi, err := os.Stat(filepath.Join(dir, "d2", "f"))
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular())
		}},
		{name: "file or create keeps content", path: file, typ: v1.HostPathFileOrCreate, check: func(t *testing.T) {
			assert.Equal(t, "x", readFile(t, file))
		}},
		{name: "socket", path: sock, typ: v1.HostPathSocket},
		{name: "socket, is a file", path: file, typ: v1.HostPathSocket, wantErr: "is not a socket file"},
		{name: "char device", path: "/dev/null", typ: v1.HostPathCharDev},
		{name: "char device, is a file", path: file, typ: v1.HostPathCharDev, wantErr: "is not a character device"},
		{name: "block device, is a char device", path: "/dev/null", typ: v1.HostPathBlockDev, wantErr: "is not a block device"},
		{name: "relative path", path: "etc", typ: v1.HostPathUnset, wantErr: `hostPath path "etc" must be absolute`},
		{name: "path with ..", path: "/var/../etc", typ: v1.HostPathUnset, wantErr: `hostPath path "/var/../etc" must not contain '..'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil).run()
			pod := newPod("p", v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tc.path, Type: ptr(tc.typ)}}})
			if tc.wantErr != "" {
				err := h.failMount(pod)
				assert.ErrorIs(t, err, volume.ErrTimeout)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.Contains(t, h.rec.Events()[0].Message, tc.wantErr)
				return
			}
			require.NoError(t, h.mount(pod))
			paths, err := h.m.VolumeHostPaths(pod)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"host": tc.path}, paths)
			if tc.check != nil {
				tc.check(t)
			}
			require.NoError(t, h.unmount(pod))
			if tc.path == dir {
				assert.True(t, exists(dir), "a hostPath is never removed")
			}
		})
	}
}

func TestConfigMap(t *testing.T) {
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
		Data:       map[string]string{"a.conf": "A", "b.conf": "B"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2}},
	}
	for _, tc := range []struct {
		name      string
		src       v1.ConfigMapVolumeSource
		noCM      bool
		want      map[string]string
		wantModes map[string]fs.FileMode
		wantErr   string // in the FailedMount event
	}{
		{
			name:      "all keys, default mode",
			src:       v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}},
			want:      map[string]string{"a.conf": "A", "b.conf": "B", "bin": "\x00\x01\x02"},
			wantModes: map[string]fs.FileMode{"a.conf": 0o644},
		},
		{
			name: "items with paths and modes",
			src: v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, DefaultMode: ptr(int32(0o600)),
				Items: []v1.KeyToPath{{Key: "a.conf", Path: "etc/a"}, {Key: "b.conf", Path: "b", Mode: ptr(int32(0o400))}}},
			want:      map[string]string{"etc/a": "A", "b": "B"},
			wantModes: map[string]fs.FileMode{"etc/a": 0o600, "b": 0o400},
		},
		{
			name:    "missing configMap",
			src:     v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}},
			noCM:    true,
			wantErr: `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`,
		},
		{
			name: "missing optional configMap is empty",
			src:  v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Optional: ptr(true)},
			noCM: true,
			want: map[string]string{},
		},
		{
			name:    "missing key",
			src:     v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Items: []v1.KeyToPath{{Key: "nope", Path: "x"}}},
			wantErr: "configmap references non-existent config key: nope",
		},
		{
			name: "missing key of an optional configMap is skipped",
			src: v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Optional: ptr(true),
				Items: []v1.KeyToPath{{Key: "nope", Path: "x"}, {Key: "a.conf", Path: "a"}}},
			want: map[string]string{"a": "A"},
		},
		{
			name:    "item path climbing out",
			src:     v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Items: []v1.KeyToPath{{Key: "a.conf", Path: "../../../escape"}}},
			wantErr: `must not contain '..'`,
		},
		{
			name:    "absolute item path",
			src:     v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Items: []v1.KeyToPath{{Key: "a.conf", Path: "/etc/passwd"}}},
			wantErr: `must be a relative path`,
		},
		{
			name:    "mode out of range",
			src:     v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}, DefaultMode: ptr(int32(0o4755))},
			wantErr: `out of range`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil).run()
			if !tc.noCM {
				h.src.SetConfigMap(cm)
			}
			pod := newPod("p", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &tc.src}})
			dir := h.volDir(pod, volume.ConfigMapPluginName, "cfg")
			if tc.wantErr != "" {
				require.Error(t, h.failMount(pod))
				ev := h.rec.Events()[0]
				assert.Equal(t, volume.EventFailedMount, ev.Reason)
				assert.Contains(t, ev.Message, tc.wantErr)
				assert.False(t, exists(filepath.Join(h.root, "escape")))
				assert.False(t, exists(filepath.Join(dir, "x")))
				return
			}
			require.NoError(t, h.mount(pod))
			assert.Equal(t, tc.want, listFiles(t, dir))
			for p, mode := range tc.wantModes {
				fi, err := os.Stat(filepath.Join(dir, p))
				require.NoError(t, err)
				assert.Equal(t, mode, fi.Mode().Perm(), p)
			}
			mts, err := h.m.Mounts(pod, &v1.Container{Name: "app", VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}})
			require.NoError(t, err)
			assert.True(t, mts[0].Readonly, "configMap volumes are read-only")
			assert.Empty(t, h.mnt.Mounted(), "configMaps are on disk, not tmpfs")
		})
	}
}

func TestSecret(t *testing.T) {
	h := newHarness(t, nil).run()
	h.src.SetSecret(&v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
		Data:       map[string][]byte{"password": []byte("hunter2"), "user": []byte("me")},
	})
	pod := newPod("p",
		v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}},
		v1.Volume{Name: "tight", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr(int32(0o400))}}},
	)
	require.NoError(t, h.mount(pod))
	dir := h.volDir(pod, volume.SecretPluginName, "creds")
	assert.Equal(t, map[string]string{"password": "hunter2", "user": "me"}, listFiles(t, dir))
	fi, err := os.Stat(filepath.Join(dir, "password"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o644), fi.Mode().Perm(), "upstream's default mode")
	fi, err = os.Stat(filepath.Join(h.volDir(pod, volume.SecretPluginName, "tight"), "password"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o400), fi.Mode().Perm())
	assert.Contains(t, h.mnt.Mounted(), dir, "secrets live on tmpfs")

	require.NoError(t, h.unmount(pod))
	assert.False(t, exists(dir), "secret data removed with the pod")
	assert.Empty(t, h.mnt.Mounted())
}

func TestSecretMissingAndNoSource(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources volume.Sources
		want    string
	}{
		{name: "not found", sources: volume.Sources{Secrets: &volume.StaticSources{}}, want: `secret "creds" not found`},
		{name: "no source", want: `secret "creds": no source configured (Options.Sources.Secrets)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(o *volume.Options) { o.Sources = tc.sources }).run()
			pod := newPod("p", v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}})
			assert.ErrorContains(t, h.failMount(pod), tc.want)
			assert.Contains(t, h.rec.Events()[0].Message, tc.want)
		})
	}
}

func TestSecretDataIsNeverLogged(t *testing.T) {
	var logs strings.Builder
	h := newHarness(t, func(o *volume.Options) { o.Logger = newTextLogger(&logs) }).run()
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"password": []byte("hunter2")}})
	pod := newPod("p", v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds",
		Items: []v1.KeyToPath{{Key: "password", Path: "p"}, {Key: "missing", Path: "m"}}}}})
	require.Error(t, h.failMount(pod))
	h.stop()
	assert.Contains(t, logs.String(), "volume set up failed")
	assert.NotContains(t, logs.String(), "hunter2")
	for _, e := range h.rec.Strings() {
		assert.NotContains(t, e, "hunter2")
	}
}

func TestDownwardAPI(t *testing.T) {
	h := newHarness(t, func(o *volume.Options) {
		o.NodeAllocatable = v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi")}
	}).run()
	pod := newPod("p", v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
		{Path: "uid", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}},
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "tier", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}},
		{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		{Path: "cpu-cores", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
		{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "req", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "requests.memory"}},
	}}}})
	pod.Labels = map[string]string{"tier": "web", "app": `say "hi"`}
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
	require.NoError(t, h.mount(pod))
	dir := h.volDir(pod, volume.DownwardAPIPluginName, "info")
	assert.Equal(t, map[string]string{
		"name": "p", "ns": "ns", "uid": "uid-p",
		"labels": "app=\"say \\\"hi\\\"\"\ntier=\"web\"",
		"tier":   "web", "cpu": "250", "cpu-cores": "1", "mem": "8192", "req": "0",
	}, listFiles(t, dir))

	// A label change refreshes the volume on the next WaitForMount.
	pod2 := pod.DeepCopy()
	pod2.Labels["tier"] = "db"
	require.NoError(t, h.mount(pod2))
	waitFor(t, "the label to be written", func() bool { return readFile(t, filepath.Join(dir, "tier")) == "db" })
}

func TestProjected(t *testing.T) {
	h := newHarness(t, nil).run()
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}})
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}})
	pod := newPod("p", v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o644)),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Items: []v1.KeyToPath{{Key: "k", Path: "sec/k", Mode: ptr(int32(0o400))}}}},
			{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr(true)}},
		},
	}}})
	pod.Spec.ServiceAccountName = "builder"
	require.NoError(t, h.mount(pod))
	dir := h.volDir(pod, volume.ProjectedPluginName, "kube-api-access")
	assert.Equal(t, map[string]string{"token": "token-ns-builder-1", "ca.crt": "CA", "namespace": "ns", "sec/k": "v"}, listFiles(t, dir))
	fi, err := os.Stat(filepath.Join(dir, "sec", "k"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o400), fi.Mode().Perm())
	assert.Contains(t, h.mnt.Mounted(), dir, "projected volumes live on tmpfs")

	calls := h.tokens.Calls()
	require.Len(t, calls, 1)
	req := calls[0].Request.Spec
	assert.Equal(t, int64(3607), *req.ExpirationSeconds)
	assert.Equal(t, "Pod", req.BoundObjectRef.Kind)
	assert.Equal(t, pod.UID, req.BoundObjectRef.UID)
	assert.Empty(t, req.Audiences, "no audience: the API server's")
}

func TestProjectedConflictingPaths(t *testing.T) {
	h := newHarness(t, nil).run()
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"x": "1"}})
	h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Data: map[string]string{"x": "2"}})
	pod := newPod("p", v1.Volume{Name: "both", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "a"}}},
		{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "b"}}},
	}}}})
	assert.ErrorContains(t, h.failMount(pod), `projected path "x" is written by more than one source`)
}

func TestConfigMapKeyTraversalNeverEscapes(t *testing.T) {
	for _, key := range []string{"../../../../escape", "..data", "../x"} {
		t.Run(key, func(t *testing.T) {
			h := newHarness(t, nil).run()
			h.src.SetConfigMap(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "evil"}, Data: map[string]string{key: "pwned", "ok": "1"}})
			pod := newPod("p", v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "evil"}}}})
			require.Error(t, h.failMount(pod))
			msg := h.rec.Events()[0].Message
			assert.True(t, strings.Contains(msg, "..") && (strings.Contains(msg, "must not contain") || strings.Contains(msg, "must not start")), msg)
			err := filepath.WalkDir(h.root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					return errors.New("file written: " + p)
				}
				return err
			})
			assert.NoError(t, err)
		})
	}
}

// testGroup is a group the test may give files to: any, as root; else the
// test's own.
func testGroup() int64 {
	if os.Geteuid() == 0 {
		return 4242
	}
	return int64(os.Getgid())
}

func groupOf(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	return int64(fi.Sys().(*syscall.Stat_t).Gid)
}

func TestFSGroupOwnsTheVolumes(t *testing.T) {
	h := newHarness(t, nil).run()
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"password": []byte("hunter2")}})
	pod := newPod("p",
		v1.Volume{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		v1.Volume{Name: "tight", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr(int32(0o400))}}},
		v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}}},
	)
	gid := testGroup()
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	require.NoError(t, h.mount(pod))

	// emptyDir: the group's, setgid, still 0777.
	cache := h.volDir(pod, volume.EmptyDirPluginName, "cache")
	fi, err := os.Stat(cache)
	require.NoError(t, err)
	assert.Equal(t, gid, groupOf(t, cache))
	assert.Equal(t, fs.FileMode(0o777)|fs.ModeSetgid, fi.Mode()&(fs.ModePerm|fs.ModeSetgid))

	// A secret with mode 0400: group-readable (0440), every file and the
	// data directory the group's.
	dir := h.volDir(pod, volume.SecretPluginName, "tight")
	fi, err = os.Stat(filepath.Join(dir, "password"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o440), fi.Mode().Perm())
	data, err := filepath.EvalSymlinks(filepath.Join(dir, "..data"))
	require.NoError(t, err)
	assert.Equal(t, gid, groupOf(t, filepath.Join(data, "password")))
	assert.Equal(t, gid, groupOf(t, data))
	dfi, err := os.Stat(data)
	require.NoError(t, err)
	assert.NotZero(t, dfi.Mode()&fs.ModeSetgid, "data directories are setgid")

	// New data gets the same before it is visible.
	h.src.SetSecret(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"password": []byte("changed")}})
	assert.True(t, h.m.Refresh(pod))
	waitFor(t, "the secret's new content", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "password"))
		return err == nil && string(b) == "changed"
	})
	fi, err = os.Stat(filepath.Join(dir, "password"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o440), fi.Mode().Perm())
	assert.Equal(t, gid, groupOf(t, filepath.Join(dir, "password")))

	// A hostPath is the host's: untouched.
	host := pod.Spec.Volumes[2].HostPath.Path
	assert.NotEqual(t, fs.ModeSetgid, mustStat(t, host).Mode()&fs.ModeSetgid)
	require.NoError(t, h.unmount(pod))
}

func mustStat(t *testing.T, path string) fs.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi
}
