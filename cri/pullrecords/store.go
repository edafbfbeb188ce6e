package pullrecords

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeletkit/kubeletkit/internal/atomicfile"
)

// DirName is the directory under the kubelet's root directory that holds
// the records, upstream's: <root>/image_manager/pulling (intents) and
// <root>/image_manager/pulled (records).
const DirName = "image_manager"

// filePrefix begins every record's and intent's file name: "sha256-" and
// the hex SHA-256 of the image (intent) or image reference (record), as
// upstream names them.
const filePrefix = "sha256-"

// Store keeps intents and records as files, one per image (intents) or
// image reference (records), in upstream's layout and format, so that
// upstream's kubelet and this package read each other's: under Dir,
// pulling/ and pulled/, mode 0700, each file 0600, written to a temporary
// file, synced and renamed over the old one, so that a crash leaves the
// old record or the new one. It holds hashes of credentials, never
// credentials. A Store does no locking: Manager serializes its use.
type Store struct {
	pulling, pulled string
}

// OpenStore makes dir, dir/pulling and dir/pulled (0700, and tightens
// them to 0700 if they exist), removes the temporary files a crash left,
// and returns the store. Records written by an older version of the API
// (v1alpha1) are read as they are; Manager.Open rewrites them.
func OpenStore(dir string) (*Store, error) {
	s := &Store{pulling: filepath.Join(dir, "pulling"), pulled: filepath.Join(dir, "pulled")}
	for _, d := range []string{dir, s.pulling, s.pulled} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("open pull records: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("open pull records: %w", err)
		}
	}
	for _, d := range []string{s.pulling, s.pulled} {
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("open pull records: %w", err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() && isTemp(e.Name()) {
				_ = os.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
	return s, nil
}

// isTemp says whether a file name is a temporary file a crash left: one
// of atomicfile.Write's (".sha256-….<random>"), or one of upstream
// kubelet's ("sha256-….tmp").
func isTemp(name string) bool {
	return strings.HasPrefix(name, "."+filePrefix) || (strings.HasPrefix(name, filePrefix) && strings.HasSuffix(name, ".tmp"))
}

// fileName is the file of an image or image reference.
func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filePrefix + hex.EncodeToString(sum[:])
}

// WriteIntent records that image (a container's image field) is about to
// be pulled.
func (s *Store) WriteIntent(image string) error {
	b, err := MarshalIntent(image)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.pulling, fileName(image)), b)
}

// DeleteIntent removes image's intent; none is not an error.
func (s *Store) DeleteIntent(image string) error {
	return removeFile(filepath.Join(s.pulling, fileName(image)))
}

// IntentExists says whether an intent to pull image is recorded.
func (s *Store) IntentExists(image string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(s.pulling, fileName(image)))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	got, _, err := ParseIntent(b)
	if err != nil {
		return false, err
	}
	return got == image, nil
}

// Intents lists the recorded intents, with their files' version. A file
// that cannot be read or parsed is left out, and its error joined in the
// error returned beside the others.
func (s *Store) Intents() (images []string, old []bool, err error) {
	var errs []error
	walk(s.pulling, &errs, func(path string, b []byte) {
		image, o, err := ParseIntent(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			return
		}
		images, old = append(images, image), append(old, o)
	})
	return images, old, errors.Join(errs...)
}

// Record returns the record of imageRef: nil and false when there is
// none, nil, true and the error when its file cannot be read or parsed.
func (s *Store) Record(imageRef string) (*Record, bool, error) {
	b, err := os.ReadFile(filepath.Join(s.pulled, fileName(imageRef)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	r, _, err := ParseRecord(b)
	if err != nil {
		return nil, true, err
	}
	if r.ImageRef != imageRef {
		return nil, false, nil
	}
	return r, true, nil
}

// WriteRecord writes r, replacing the record of its ImageRef.
func (s *Store) WriteRecord(r *Record) error {
	b, err := MarshalRecord(r)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.pulled, fileName(r.ImageRef)), b)
}

// DeleteRecord removes imageRef's record; none is not an error.
func (s *Store) DeleteRecord(imageRef string) error {
	return removeFile(filepath.Join(s.pulled, fileName(imageRef)))
}

// Records lists the records, with their files' version, as Intents.
func (s *Store) Records() (records []*Record, old []bool, err error) {
	var errs []error
	walk(s.pulled, &errs, func(path string, b []byte) {
		r, o, err := ParseRecord(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			return
		}
		records, old = append(records, r), append(old, o)
	})
	return records, old, errors.Join(errs...)
}

// walk reads every record file of dir (its name begins with filePrefix:
// no temporary file, no file another program put there, no directory).
func walk(dir string, errs *[]error, each func(path string, b []byte)) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		*errs = append(*errs, err)
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), filePrefix) || isTemp(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		each(path, b)
	}
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
