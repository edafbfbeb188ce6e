package atomicwriter_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/volume/atomicwriter"
)

// readAll returns every regular file reachable from dir through the
// user-visible symlinks, path → content.
func readAll(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		root := filepath.Join(dir, e.Name())
		err := filepath.WalkDir(root+"/", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(dir, filepath.Clean(p))
				out[rel] = string(b)
			}
			return nil
		})
		if err != nil {
			// a top-level file: WalkDir on "file/" fails; read it directly.
			b, rerr := os.ReadFile(root)
			require.NoError(t, rerr)
			out[e.Name()] = string(b)
		}
	}
	return out
}

func dataDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.Name() != atomicwriter.DataDirName {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		steps   []map[string]atomicwriter.File
		want    map[string]string
		visible []string // top-level names in the directory after the last step
	}{
		{
			name:    "first write",
			steps:   []map[string]atomicwriter.File{{"a": {Data: []byte("1")}, "dir/b": {Data: []byte("2")}}},
			want:    map[string]string{"a": "1", "dir/b": "2"},
			visible: []string{"a", "dir"},
		},
		{
			name: "update changes content and drops removed keys",
			steps: []map[string]atomicwriter.File{
				{"a": {Data: []byte("1")}, "gone": {Data: []byte("x")}, "d/gone": {Data: []byte("y")}},
				{"a": {Data: []byte("2")}, "new": {Data: []byte("3")}},
			},
			want:    map[string]string{"a": "2", "new": "3"},
			visible: []string{"a", "new"},
		},
		{
			name:    "empty payload",
			steps:   []map[string]atomicwriter.File{{"a": {Data: []byte("1")}}, {}},
			want:    map[string]string{},
			visible: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := atomicwriter.New(dir, atomicwriter.Options{})
			for _, p := range tc.steps {
				changed, err := w.Write(p)
				require.NoError(t, err)
				assert.True(t, changed)
			}
			assert.Equal(t, tc.want, readAll(t, dir))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			var visible []string
			for _, e := range entries {
				if !strings.HasPrefix(e.Name(), "..") {
					visible = append(visible, e.Name())
					target, err := os.Readlink(filepath.Join(dir, e.Name()))
					require.NoError(t, err, "user-visible entries are symlinks")
					assert.Equal(t, filepath.Join("..data", e.Name()), target)
				}
			}
			sort.Strings(visible)
			assert.Equal(t, tc.visible, visible)
			assert.Len(t, dataDirs(t, dir), 1, "only the current data directory is left")
		})
	}
}

func TestWriteIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	w := atomicwriter.New(dir, atomicwriter.Options{})
	p := map[string]atomicwriter.File{"a": {Data: []byte("1"), Mode: 0o400}}
	changed, err := w.Write(p)
	require.NoError(t, err)
	require.True(t, changed)
	before := dataDirs(t, dir)

	changed, err = w.Write(p)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, before, dataDirs(t, dir))

	p["a"] = atomicwriter.File{Data: []byte("1"), Mode: 0o440}
	changed, err = w.Write(p)
	require.NoError(t, err)
	assert.True(t, changed, "a mode change is a change")
}

func TestWriteModes(t *testing.T) {
	dir := t.TempDir()
	w := atomicwriter.New(dir, atomicwriter.Options{})
	_, err := w.Write(map[string]atomicwriter.File{
		"default": {Data: []byte("x")},
		"secret":  {Data: []byte("x"), Mode: 0o400},
		"exec":    {Data: []byte("x"), Mode: 0o755},
	})
	require.NoError(t, err)
	for name, want := range map[string]fs.FileMode{"default": 0o644, "secret": 0o400, "exec": 0o755} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode().Perm(), name)
	}
}

func TestWriteRejectsBadPaths(t *testing.T) {
	for _, p := range []string{
		"../escape", "a/../../escape", "/etc/passwd", "..data", "..hidden", "a/..", "",
		strings.Repeat("a", 256), strings.Repeat("a/", 2049),
	} {
		t.Run(fmt.Sprintf("%.20q", p), func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "vol")
			require.NoError(t, os.Mkdir(dir, 0o755))
			w := atomicwriter.New(dir, atomicwriter.Options{})
			_, err := w.Write(map[string]atomicwriter.File{p: {Data: []byte("x")}, "ok": {Data: []byte("y")}})
			require.Error(t, err)
			assert.True(t, errors.Is(err, atomicwriter.ErrInvalidPath), err)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing written")
			entries, err = os.ReadDir(parent)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "nothing written outside")
		})
	}
}

func TestWriteRejectsFileAndDirectory(t *testing.T) {
	w := atomicwriter.New(t.TempDir(), atomicwriter.Options{})
	_, err := w.Write(map[string]atomicwriter.File{"a": {}, "a/b": {}})
	assert.ErrorIs(t, err, atomicwriter.ErrInvalidPath)
}

func TestWriteRefusesToReplaceARealFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("mine"), 0o644))
	w := atomicwriter.New(dir, atomicwriter.Options{})
	_, err := w.Write(map[string]atomicwriter.File{"a": {Data: []byte("x")}})
	require.Error(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))
}

// TestConcurrentReaderNeverSeesAMix swaps payloads of versioned files
// while readers resolve ..data once and read every file through it: all
// files a reader gets carry the same version, and no file is ever empty or
// partial. A reader whose data directory was removed under it retries.
func TestConcurrentReaderNeverSeesAMix(t *testing.T) {
	dir := t.TempDir()
	w := atomicwriter.New(dir, atomicwriter.Options{})
	const keys = 8
	payload := func(v int) map[string]atomicwriter.File {
		p := map[string]atomicwriter.File{}
		for k := 0; k < keys; k++ {
			p[fmt.Sprintf("k%02d", k)] = atomicwriter.File{Data: []byte(fmt.Sprintf("v%d-%s", v, strings.Repeat("x", 512)))}
		}
		return p
	}
	_, err := w.Write(payload(0))
	require.NoError(t, err)

	var stop atomic.Bool
	var reads, mixes atomic.Int64
	var firstMix atomic.Value
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				ts, err := os.Readlink(filepath.Join(dir, atomicwriter.DataDirName))
				if err != nil {
					mixes.Add(1)
					firstMix.CompareAndSwap(nil, "readlink: "+err.Error())
					return
				}
				versions := map[string]bool{}
				ok := true
				for k := 0; k < keys; k++ {
					b, err := os.ReadFile(filepath.Join(dir, ts, fmt.Sprintf("k%02d", k)))
					if errors.Is(err, fs.ErrNotExist) {
						ok = false // removed after the swap: retry
						break
					}
					if err != nil || len(b) < 3 {
						mixes.Add(1)
						firstMix.CompareAndSwap(nil, fmt.Sprintf("read: %v %q", err, b))
						return
					}
					versions[strings.SplitN(string(b), "-", 2)[0]] = true
				}
				if ok {
					reads.Add(1)
					if len(versions) != 1 {
						mixes.Add(1)
						firstMix.CompareAndSwap(nil, fmt.Sprint("versions ", versions))
					}
				}
				// Through the user-visible symlinks each file is whole.
				b, err := os.ReadFile(filepath.Join(dir, "k05"))
				if err == nil && (len(b) < 512 || !strings.HasPrefix(string(b), "v")) {
					mixes.Add(1)
					firstMix.CompareAndSwap(nil, fmt.Sprintf("partial %q", b))
				}
			}
		}()
	}
	for v := 1; v <= 30; v++ {
		_, err := w.Write(payload(v))
		require.NoError(t, err)
	}
	// Keep readers going until they have completed some reads.
	for v := 31; reads.Load() < 20 && v < 5000; v++ {
		_, err := w.Write(payload(v))
		require.NoError(t, err)
	}
	stop.Store(true)
	wg.Wait()
	assert.Zero(t, mixes.Load(), "first: %v", firstMix.Load())
	assert.Positive(t, reads.Load())
}

func TestWriteSetPerms(t *testing.T) {
	dir := t.TempDir()
	var seen []string
	fail := false
	w := atomicwriter.New(dir, atomicwriter.Options{SetPerms: func(dataDir string) error {
		// The new data is written, and not yet visible.
		b, err := os.ReadFile(filepath.Join(dataDir, "k"))
		require.NoError(t, err)
		seen = append(seen, string(b))
		if target, err := os.Readlink(filepath.Join(dir, atomicwriter.DataDirName)); err == nil {
			assert.NotEqual(t, filepath.Base(dataDir), target, "not visible yet")
		}
		if fail {
			return errors.New("no chown here")
		}
		return nil
	}})
	_, err := w.Write(map[string]atomicwriter.File{"k": {Data: []byte("v1")}})
	require.NoError(t, err)
	fail = true
	_, err = w.Write(map[string]atomicwriter.File{"k": {Data: []byte("v2")}})
	require.ErrorContains(t, err, "no chown here")
	assert.Equal(t, map[string]string{"k": "v1"}, readAll(t, dir), "a failed SetPerms leaves the old data")
	assert.Equal(t, []string{"v1", "v2"}, seen)
}
