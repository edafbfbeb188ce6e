package pullrecords_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// copyDir copies testdata into a fresh directory.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
	return to
}

func TestStoreModesAndLayout(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, pullrecords.DirName)
	// A directory made too open by someone else is tightened.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pulled"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "pulled"), 0o755))
	s, err := pullrecords.OpenStore(dir)
	require.NoError(t, err)
	require.NoError(t, s.WriteIntent("busybox:1.36"))
	require.NoError(t, s.WriteRecord(&pullrecords.Record{ImageRef: "sha256:" + hex64, Credentials: map[string]pullrecords.Credentials{"busybox": {Secrets: []pullrecords.Secret{s1}}}}))
	modes := map[string]fs.FileMode{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		fi, err := d.Info()
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, path)
		modes[rel] = fi.Mode().Perm()
		return nil
	}))
	assert.Equal(t, map[string]fs.FileMode{
		"image_manager":         0o700,
		"image_manager/pulling": 0o700,
		"image_manager/pulled":  0o700,
		"image_manager/pulling/sha256-" + sha256Hex("busybox:1.36"): 0o600,
		"image_manager/pulled/sha256-" + sha256Hex("sha256:"+hex64): 0o600,
	}, modes, "upstream's layout and names, owner-only")
	b, err := os.ReadFile(filepath.Join(dir, "pulled", "sha256-"+sha256Hex("sha256:"+hex64)))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "password")
	assert.Contains(t, string(b), `"credentialHash":"hash-1"`, "a hash, not the credentials")
}

func TestStoreReadsWritesDeletes(t *testing.T) {
	s, err := pullrecords.OpenStore(t.TempDir())
	require.NoError(t, err)
	ok, err := s.IntentExists("app:1")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.WriteIntent("app:1"))
	require.NoError(t, s.WriteIntent("app:1"), "again")
	require.NoError(t, s.WriteIntent("app:2"))
	ok, err = s.IntentExists("app:1")
	require.NoError(t, err)
	assert.True(t, ok)
	images, _, err := s.Intents()
	require.NoError(t, err)
	sort.Strings(images)
	assert.Equal(t, []string{"app:1", "app:2"}, images)
	require.NoError(t, s.DeleteIntent("app:1"))
	require.NoError(t, s.DeleteIntent("app:1"), "none is not an error")
	images, _, err = s.Intents()
	require.NoError(t, err)
	assert.Equal(t, []string{"app:2"}, images)

	r, ok, err := s.Record("ref")
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Nil(t, r)
	want := &pullrecords.Record{ImageRef: "ref", LastUpdated: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Credentials: map[string]pullrecords.Credentials{"app": {NodePodsAccessible: true}}}
	require.NoError(t, s.WriteRecord(want))
	r, ok, err = s.Record("ref")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, want, r)
	records, _, err := s.Records()
	require.NoError(t, err)
	assert.Equal(t, []*pullrecords.Record{want}, records)
	require.NoError(t, s.DeleteRecord("ref"))
	require.NoError(t, s.DeleteRecord("ref"))
	_, ok, err = s.Record("ref")
	require.NoError(t, err)
	assert.False(t, ok)
}

// A record that does not parse is an error the callers see (a pull,
// whatever the policy), and a listing reads the others.
func TestStoreUnreadableRecord(t *testing.T) {
	dir := t.TempDir()
	s, err := pullrecords.OpenStore(dir)
	require.NoError(t, err)
	require.NoError(t, s.WriteRecord(&pullrecords.Record{ImageRef: "good"}))
	bad := filepath.Join(dir, "pulled", "sha256-"+sha256Hex("bad"))
	require.NoError(t, os.WriteFile(bad, []byte(`{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","imageRef":"bad"`), 0o600))
	r, exists, err := s.Record("bad")
	assert.Error(t, err)
	assert.True(t, exists)
	assert.Nil(t, r)
	records, _, err := s.Records()
	assert.ErrorIs(t, err, pullrecords.ErrMalformed)
	assert.Equal(t, []*pullrecords.Record{{ImageRef: "good"}}, records)
}

// A crash between a temporary file's write and its rename leaves the old
// record, and the temporary file, which the next OpenStore removes (and
// upstream's own ".tmp" files too); files another program put there are
// left alone.
func TestStoreCrashLeftovers(t *testing.T) {
	dir := copyDir(t, filepath.Join("testdata", "upstream"))
	name := "sha256-" + sha256Hex(upstreamRef)
	pulled := filepath.Join(dir, "pulled")
	leftovers := []string{"." + name + ".123456", name + ".tmp"}
	for _, l := range leftovers {
		require.NoError(t, os.WriteFile(filepath.Join(pulled, l), []byte(`{"kind":`), 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(pulled, "README"), []byte("someone's"), 0o600))
	s, err := pullrecords.OpenStore(dir)
	require.NoError(t, err)
	entries, err := os.ReadDir(pulled)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, l := range leftovers {
		assert.NotContains(t, names, l)
	}
	assert.Contains(t, names, "README")
	records, old, err := s.Records()
	require.NoError(t, err, "the leftovers and the other file are not read")
	assert.Len(t, records, 3)
	assert.Len(t, old, 3)
	for i, r := range records {
		assert.Equal(t, strings.HasPrefix(r.ImageRef, "sha256:3333"), old[i], r.ImageRef)
	}
}
