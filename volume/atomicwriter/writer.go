package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const (
	// DataDirName is the symlink that points at the current data directory.
	DataDirName = "..data"
	// dataDirTmpName is the symlink renamed over DataDirName.
	dataDirTmpName = "..data_tmp"
	// maxPathLength and maxFileNameLength are upstream's limits.
	maxPathLength     = 4096
	maxFileNameLength = 255
	// tsLayout names data directories: "..2006_01_02_15_04_05." and a
	// random suffix from os.MkdirTemp.
	tsLayout = "..2006_01_02_15_04_05."
)

// ErrInvalidPath is wrapped by the errors of ValidatePath.
var ErrInvalidPath = errors.New("invalid path")

// File is one file of a payload.
type File struct {
	// Data is the content.
	Data []byte
	// Mode is the permission bits (0 means 0644).
	Mode fs.FileMode
	// Owner, when non-nil, is the uid the file is chowned to (upstream's
	// fsUser, used for service account tokens).
	Owner *int64
}

// Writer writes payloads into one directory. Create one with New.
type Writer struct {
	dir      string
	now      func() time.Time
	setPerms func(dataDir string) error
}

// Options configures a Writer.
type Options struct {
	// Now stamps data directory names (nil: time.Now). Only the name depends
	// on it; uniqueness comes from a random suffix.
	Now func() time.Time
	// SetPerms, when set, is called with a new data directory once its
	// files are written and before it becomes visible (upstream's setPerms:
	// a volume's fsGroup ownership). Its error fails the Write and the new
	// data is discarded.
	SetPerms func(dataDir string) error
}

// New returns a Writer for dir, which must exist when Write is called.
func New(dir string, opts Options) *Writer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Writer{dir: dir, now: opts.Now, setPerms: opts.SetPerms}
}

// ValidatePath checks one payload path: relative, no ".." element, not
// starting with "..", at most 4096 bytes with elements of at most 255.
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty", ErrInvalidPath)
	case len(p) > maxPathLength:
		return fmt.Errorf("%w %q: longer than %d bytes", ErrInvalidPath, p[:64]+"...", maxPathLength)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w %q: must be relative", ErrInvalidPath, p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("%w %q: must not start with '..'", ErrInvalidPath, p)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%w %q: contains a NUL byte", ErrInvalidPath, p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return fmt.Errorf("%w %q: must not contain '..'", ErrInvalidPath, p)
		}
		if len(el) > maxFileNameLength {
			return fmt.Errorf("%w %q: element longer than %d bytes", ErrInvalidPath, p, maxFileNameLength)
		}
	}
	return nil
}

// clean validates a payload and returns it keyed by cleaned paths.
func clean(payload map[string]File) (map[string]File, error) {
	out := make(map[string]File, len(payload))
	for p, f := range payload {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
		c := filepath.Clean(p)
		if c == "." || strings.HasPrefix(c, "..") {
			return nil, fmt.Errorf("%w %q: names no file", ErrInvalidPath, p)
		}
		if _, dup := out[c]; dup {
			return nil, fmt.Errorf("%w %q: given twice", ErrInvalidPath, p)
		}
		if f.Mode == 0 {
			f.Mode = 0o644
		}
		out[c] = f
	}
	// A path may not be both a file and a directory ("a" and "a/b").
	for c := range out {
		for d := filepath.Dir(c); d != "."; d = filepath.Dir(d) {
			if _, ok := out[d]; ok {
				return nil, fmt.Errorf("%w %q: %q is also a file", ErrInvalidPath, c, d)
			}
		}
	}
	return out, nil
}

// Write makes the directory hold exactly payload (path → file), atomically.
// It reports whether anything changed.
func (w *Writer) Write(payload map[string]File) (changed bool, err error) {
	files, err := clean(payload)
	if err != nil {
		return false, fmt.Errorf("write %s: %w", w.dir, err)
	}
	st, err := os.Stat(w.dir)
	if err != nil {
		return false, fmt.Errorf("write %s: %w", w.dir, err)
	}
	if !st.IsDir() {
		return false, fmt.Errorf("write %s: not a directory", w.dir)
	}

	dataLink := filepath.Join(w.dir, DataDirName)
	oldTS, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("write %s: read %s: %w", w.dir, DataDirName, err)
	}
	if oldTS != "" && !isDataDirName(oldTS) {
		return false, fmt.Errorf("write %s: %s points at %q, which is not a data directory", w.dir, DataDirName, oldTS)
	}
	oldKeys := map[string]bool{}
	if oldTS != "" {
		same, keys, err := sameContent(filepath.Join(w.dir, oldTS), files)
		if err != nil {
			return false, fmt.Errorf("write %s: %w", w.dir, err)
		}
		oldKeys = keys
		if same && w.linksPresent(files) {
			return false, nil
		}
	}

	tsDir, err := os.MkdirTemp(w.dir, w.now().UTC().Format(tsLayout))
	if err != nil {
		return false, fmt.Errorf("write %s: %w", w.dir, err)
	}
	tsName := filepath.Base(tsDir)
	if err := os.Chmod(tsDir, 0o755); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("write %s: %w", w.dir, err)
	}
	if err := writeFiles(tsDir, files); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("write %s: %w", w.dir, err)
	}
	if w.setPerms != nil {
		if err := w.setPerms(tsDir); err != nil {
			_ = os.RemoveAll(tsDir)
			return false, fmt.Errorf("write %s: set permissions: %w", w.dir, err)
		}
	}

	tmpLink := filepath.Join(w.dir, dataDirTmpName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(tsName, tmpLink); err != nil {
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("write %s: %w", w.dir, err)
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		_ = os.Remove(tmpLink)
		_ = os.RemoveAll(tsDir)
		return false, fmt.Errorf("write %s: swap %s: %w", w.dir, DataDirName, err)
	}

	if err := w.createLinks(files); err != nil {
		return true, fmt.Errorf("write %s: %w", w.dir, err)
	}
	if err := w.removeStaleLinks(files, oldKeys); err != nil {
		return true, fmt.Errorf("write %s: %w", w.dir, err)
	}
	if oldTS != "" {
		if err := os.RemoveAll(filepath.Join(w.dir, oldTS)); err != nil {
			return true, fmt.Errorf("write %s: remove old data: %w", w.dir, err)
		}
	}
	return true, nil
}

// isDataDirName reports whether name looks like one of our data directories.
func isDataDirName(name string) bool {
	return strings.HasPrefix(name, "..") && name != DataDirName && name != dataDirTmpName && !strings.ContainsRune(name, '/') && len(name) > len(tsLayout)
}

// topLevel returns the first element of a cleaned path.
func topLevel(p string) string {
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}

// sameContent compares a data directory with files; it also returns the
// top-level names the directory holds.
func sameContent(dir string, files map[string]File) (bool, map[string]bool, error) {
	keys := map[string]bool{}
	same := true
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		keys[topLevel(rel)] = true
		if d.IsDir() {
			return nil
		}
		n++
		f, ok := files[rel]
		if !ok || !d.Type().IsRegular() {
			same = false
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm() != f.Mode.Perm() {
			same = false
			return nil
		}
		if info.Size() != int64(len(f.Data)) {
			same = false
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, f.Data) {
			same = false
		}
		return nil
	})
	if err != nil {
		return false, nil, fmt.Errorf("read current data: %w", err)
	}
	return same && n == len(files), keys, nil
}

// writeFiles writes files into dir, creating subdirectories 0755.
func writeFiles(dir string, files map[string]File) error {
	made := map[string]bool{dir: true}
	for p, f := range files {
		full := filepath.Join(dir, p)
		if parent := filepath.Dir(full); !made[parent] {
			if err := os.MkdirAll(parent, 0o755); err != nil {
				return err
			}
			made[parent] = true
		}
		if err := writeFile(full, f); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// writeFile creates one file with exactly f's mode (the umask does not
// apply) and owner.
func writeFile(path string, f File) error {
	fd, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, f.Mode.Perm())
	if err != nil {
		return err
	}
	_, werr := fd.Write(f.Data)
	if werr == nil {
		werr = fd.Chmod(f.Mode.Perm())
	}
	if werr == nil && f.Owner != nil {
		werr = fd.Chown(int(*f.Owner), -1)
	}
	if cerr := fd.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// linksPresent reports whether every top-level entry has its symlink.
func (w *Writer) linksPresent(files map[string]File) bool {
	for p := range files {
		top := topLevel(p)
		if t, err := os.Readlink(filepath.Join(w.dir, top)); err != nil || t != filepath.Join(DataDirName, top) {
			return false
		}
	}
	return true
}

// createLinks makes <dir>/<top> → ..data/<top> for each top-level entry.
func (w *Writer) createLinks(files map[string]File) error {
	done := map[string]bool{}
	for p := range files {
		top := topLevel(p)
		if done[top] {
			continue
		}
		done[top] = true
		link := filepath.Join(w.dir, top)
		want := filepath.Join(DataDirName, top)
		if t, err := os.Readlink(link); err == nil && t == want {
			continue
		}
		// Something is in the way: only a symlink may be replaced; a real
		// file or directory is refused rather than removed.
		if fi, err := os.Lstat(link); err == nil {
			if fi.Mode()&fs.ModeSymlink == 0 {
				return fmt.Errorf("%s exists and is not a symlink", top)
			}
			if err := os.Remove(link); err != nil {
				return err
			}
		}
		if err := os.Symlink(want, link); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleLinks removes the symlinks of top-level entries the old data
// had and the new has not.
func (w *Writer) removeStaleLinks(files map[string]File, oldKeys map[string]bool) error {
	now := map[string]bool{}
	for p := range files {
		now[topLevel(p)] = true
	}
	stale := make([]string, 0)
	for k := range oldKeys {
		if !now[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		link := filepath.Join(w.dir, k)
		fi, err := os.Lstat(link)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue // not ours
		}
		if err := os.Remove(link); err != nil {
			return err
		}
	}
	return nil
}
