package localstate

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Recovery is what OpenBolt did about a damaged file (Bolt.Recovered).
type Recovery struct {
	// Path is the store's file.
	Path string
	// Aside is where the damaged file was moved, next to Path
	// (Path.corrupt-<UTC time>), never deleted; the store started empty.
	// It is empty when the file was kept: one of its two meta pages did
	// not validate (a write cut short by a power loss, or damage), and
	// the store is read from the other, which is as of its last write or
	// the one before.
	Aside string
	// Cause is the damage found; it wraps ErrDamaged.
	Cause error
}

// String says what happened, for a log line or an event.
func (r Recovery) String() string {
	if r.Aside == "" {
		return fmt.Sprintf("the local state %s is damaged (%v): kept, read as of its last write or the one before", r.Path, r.Cause)
	}
	return fmt.Sprintf("the local state %s is damaged (%v): moved aside to %s; the node starts without it", r.Path, r.Cause, r.Aside)
}

// damaged wraps err as damage found in the file.
func damaged(err error) error { return fmt.Errorf("%w: %w", ErrDamaged, err) }

// guarded runs fn in a goroutine of its own in which a memory fault is a
// panic (debug.SetPanicOnFault: a read past the end of a truncated,
// memory-mapped file raises SIGBUS, which is otherwise fatal), and returns
// a panic of fn as damage. fn releases what it holds in its own deferred
// calls, which run before the panic is recovered.
func guarded(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() {
			if r := recover(); r != nil {
				done <- damaged(fmt.Errorf("bbolt panicked: %v", r))
			}
		}()
		done <- fn()
	}()
	return <-done
}

// opener opens the file at path for bbolt (bolt.Options.OpenFile) without
// following a symbolic link, refusing anything but a regular file, and,
// when want is set, a file other than want. It keeps the file it opened.
type opener struct {
	path string
	want os.FileInfo

	file *os.File
	info os.FileInfo
}

func (o *opener) openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|oNoFollow, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, symlinkError(name)
	}
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s): %w", name, info.Mode().Type(), ErrInvalidArgument)
	}
	if o.want != nil && !os.SameFile(info, o.want) {
		_ = f.Close()
		return nil, fmt.Errorf("%s was replaced while it was opened: %w", name, ErrInvalidArgument)
	}
	if o.file == nil {
		o.file, o.info = f, info
	}
	return f, nil
}

// closeIfLeft closes the file bbolt opened when bbolt did not return a
// database to close (it panicked): the file lock goes with it. Its memory
// map, if bbolt made one, cannot be reached and stays.
func (o *opener) closeIfLeft(db *bolt.DB) {
	if db == nil && o.file != nil {
		_ = o.file.Close() // bbolt may have closed it: os.File says so, harmlessly
	}
}

// stillThere checks, after the open, that path still names the file
// opened.
func (o *opener) stillThere() error {
	info, err := os.Lstat(o.path)
	if err != nil {
		return err
	}
	if !os.SameFile(info, o.info) {
		return fmt.Errorf("%s was replaced while it was opened: %w", o.path, ErrInvalidArgument)
	}
	return nil
}

func symlinkError(path string) error {
	return fmt.Errorf("%s is a symbolic link: the local state is opened without following links, so that it never writes the file a link points to; give the real path: %w", path, ErrInvalidArgument)
}

// lockError is the clean refusal of a file another process holds.
func lockError(timeout time.Duration, err error) error {
	return fmt.Errorf("held by another process for %s: %w", timeout, err)
}

// classifyOpen sorts an error of bolt.Open: a lock held elsewhere, a
// refusal of ours or an error of the system (permissions, descriptors,
// memory) are returned as they are; anything else is bbolt finding the
// file malformed, and is damage.
func classifyOpen(err error, timeout time.Duration) error {
	var errno syscall.Errno
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return lockError(timeout, err)
	case errors.Is(err, ErrInvalidArgument), errors.As(err, &pathErr), errors.As(err, &errno):
		return err
	default:
		return damaged(err)
	}
}

// verified is what verify learned about a file that passed.
type verified struct {
	info   os.FileInfo // the file checked, for the write open to match
	note   error       // a meta page that does not validate, when the other does
	took   time.Duration
	leaves int
	// checkLater is set when Tx.Check could not run (a meta page's header
	// is gone, which it asserts): it runs once the first write has
	// rewritten that page.
	checkLater bool
}

// verify opens the existing file at path read-only and checks it: its
// layout (walkLayout), a full read of every bucket, bbolt's consistency
// check (Tx.Check, or later: verified.checkLater) and the schema version. It returns an error wrapping
// ErrDamaged when the file is damaged, and another error when it cannot
// tell (the lock is held, the file is not readable) or the schema is
// newer. The database is closed, and its memory unmapped, before it
// returns, whatever happened.
func verify(path string, timeout time.Duration) (verified, error) {
	var v verified
	start := time.Now()
	err := guarded(func() error {
		o := &opener{path: path}
		var db *bolt.DB
		defer func() { o.closeIfLeft(db) }()
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout, OpenFile: o.openFile})
		if err != nil {
			return classifyOpen(err, timeout)
		}
		defer db.Close()
		v.info = o.info
		return db.View(func(tx *bolt.Tx) error {
			l, err := walkLayout(o.file, o.info.Size(), db.Info().PageSize, uint64(tx.ID()), tx.Size())
			if err != nil {
				return damaged(err)
			}
			v.leaves = l.leaves
			if l.other.err != nil {
				v.note = damaged(fmt.Errorf("meta page %d does not validate (%v); meta page %d, of transaction %d, does", l.other.page, l.other.err, l.meta.page, l.meta.txid))
			}
			if err := readAll(tx); err != nil {
				return damaged(err)
			}
			if !l.headers {
				v.checkLater = true
			} else if err := checkTx(tx); err != nil {
				return damaged(err)
			}
			return checkSchema(tx)
		})
	})
	v.took = time.Since(start)
	return v, err
}

// readAll reads every key and value of every bucket, so that a page bbolt
// cannot read faults here, in verify's guarded goroutine, rather than in
// the goroutine Tx.Check starts.
func readAll(tx *bolt.Tx) error {
	var sum uint32
	var walk func(b *bolt.Bucket) error
	walk = func(b *bolt.Bucket) error {
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			sum = crc32.Update(crc32.Update(sum, crc32.IEEETable, k), crc32.IEEETable, v)
			if v == nil {
				if sub := b.Bucket(k); sub != nil {
					if err := walk(sub); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if b == nil {
			return fmt.Errorf("the root holds %q, which is not a bucket", name)
		}
		return walk(b)
	})
}

// checkTx runs bbolt's consistency check and returns its first few findings.
func checkTx(tx *bolt.Tx) error {
	var errs []error
	n := 0
	for err := range tx.Check(bolt.WithKVStringer(keyStringer{})) {
		if n++; n <= 3 {
			errs = append(errs, err)
		}
	}
	if n > 3 {
		errs = append(errs, fmt.Errorf("and %d more", n-3))
	}
	if len(errs) > 0 {
		return fmt.Errorf("consistency check: %w", errors.Join(errs...))
	}
	return nil
}

// keyStringer shows keys as quoted strings in the check's findings (they
// are UIDs and object names) and never a value.
type keyStringer struct{}

func (keyStringer) KeyToString(k []byte) string   { return strconv.Quote(string(k[:min(len(k), 80)])) }
func (keyStringer) ValueToString(v []byte) string { return fmt.Sprintf("<%d bytes>", len(v)) }

// checkSchema reads the schema version: a newer one is refused with
// ErrSchema (a newer build's valid file, not damage); one that is not a
// number is damage (no build writes it).
func checkSchema(tx *bolt.Tx) error {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		return nil
	}
	v := meta.Get(schemaKey)
	if v == nil {
		return nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return damaged(fmt.Errorf("schema version %q is not a number: %w", v[:min(len(v), 32)], ErrSchema))
	}
	if n > SchemaVersion {
		return fmt.Errorf("schema version %d was written by a newer build; this one reads version %d or older: %w", n, SchemaVersion, ErrSchema)
	}
	return nil
}

// moveAside renames the damaged file (or directory) at path to
// path.corrupt-<UTC time>, with a number after it when that name is
// taken, and syncs the directory.
func moveAside(path string, now time.Time) (string, error) {
	base := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	aside := base
	for i := 1; ; i++ {
		_, err := os.Lstat(aside)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
		if i == 1000 {
			return "", fmt.Errorf("%s: 1000 files moved aside already", base)
		}
		aside = base + "." + strconv.Itoa(i)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return aside, nil
}
