package atomicfile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// WriteJSON writes v as JSON to path atomically, with the temporary
// file's mode (0600: os.CreateTemp's).
func WriteJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return Write(path, b)
}

// Write writes b to path atomically: to a temporary file in the same
// directory (named ".<base>.<random>", mode 0600), synced, then renamed
// over path; a failure removes the temporary file and leaves path as it
// was.
func Write(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
