package source_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

func TestManifestWarnings(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: busybox\n"
	for _, tc := range []struct {
		name, manifest string
		want           []string
	}{
		{name: "a clean pod", manifest: pod},
		{name: "a clean pod in JSON", manifest: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"web","image":"busybox"}]}}`},
		{name: "a typo", manifest: pod + "    imagePullPolicyy: Always\n",
			want: []string{`unknown field "spec.containers[0].imagePullPolicyy"`}},
		{name: "an unknown volume type", manifest: pod + "  volumes:\n  - name: data\n    glusterfsX: {path: /x}\n",
			want: []string{`unknown field "spec.volumes[0].glusterfsX"`}},
		{name: "a field twice", manifest: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","name":"web2"},"spec":{"containers":[{"name":"web","image":"busybox"}]}}`,
			want: []string{`duplicate field "metadata.name"`}},
		{name: "a second document", manifest: pod + "---\n" + pod,
			want: []string{"2 YAML documents: only the first is read"}},
		{name: "a trailing separator and comments are not documents", manifest: "---\n" + pod + "---\n# nothing here\n"},
		{name: "a pod list item's typo", manifest: "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spek: {}\n",
			want: []string{`unknown field "items[0].spek"`}},
		{name: "not a manifest", manifest: "kind: Service\napiVersion: v1\n"},
		{name: "not YAML", manifest: "{{{"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, source.ManifestWarnings([]byte(tc.manifest)))
		})
	}
}

// The file source logs a manifest's warnings once, naming the file, and
// runs the pod all the same, as upstream's kubelet runs it.
func TestFileSourceLogsManifestWarnings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	require.NoError(t, os.WriteFile(path, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: busybox\n    imagee: typo\n"), 0o600))
	var logs bytes.Buffer
	f, err := source.NewFile(source.FileOptions{Path: dir, NodeName: "node1", DisableWatch: true, Out: make(chan syncloop.PodUpdate, 1),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	pods, err := f.Read()
	require.NoError(t, err)
	require.Len(t, pods, 1)
	_, err = f.Read()
	require.NoError(t, err)
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("imagee")), "logged once: %s", logs.String())
	assert.Contains(t, logs.String(), "web.yaml")
}
