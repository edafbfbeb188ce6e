package localstate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout of the store this build writes and reads: a
// bucket per Kind, a value per key, and the "meta" bucket holding
// "schema". A store with a newer version is refused; an older one would be
// migrated when there is one.
const SchemaVersion = 1

// DefaultMaxBytes bounds the keys and values a store holds: 64 MiB, about
// 110 pods with every configMap and secret they read at their largest
// (1 MiB each) and room to spare.
const DefaultMaxBytes int64 = 64 << 20

// DefaultLockTimeout is how long Open waits for another process holding
// the file to let go.
const DefaultLockTimeout = time.Second

var (
	metaBucket = []byte("meta")
	schemaKey  = []byte("schema")
)

// BoltOptions configure OpenBolt. Every field is optional.
type BoltOptions struct {
	// MaxBytes bounds the keys and values the store holds (the file is
	// larger by bbolt's pages and free list); 0 means DefaultMaxBytes.
	MaxBytes int64
	// LockTimeout is how long Open waits for another process holding the
	// file's lock; 0 means DefaultLockTimeout.
	LockTimeout time.Duration
}

// Bolt is a Store in a bbolt file: each Write is one bbolt transaction,
// fsynced before it returns, so a crash at any point leaves the file with
// the transaction either wholly applied or not at all. The file is
// readable by its owner only (0600): it holds secrets and tokens. One
// process opens it at a time (bbolt takes a file lock). Safe for
// concurrent use; writes are serialized.
type Bolt struct {
	path string
	max  int64

	mu     sync.Mutex // guards size, closed and the write transactions
	db     *bolt.DB
	size   int64
	closed bool
}

// OpenBolt opens the store at path, creating it (and its directory, 0700)
// when absent. A store whose schema version is newer than SchemaVersion,
// or not a number, is refused with an error wrapping ErrSchema; one
// holding more than the bound is opened (it can shrink), and its writes
// that would not shrink it are refused.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	if path == "" {
		return nil, fmt.Errorf("open local state: empty path: %w", ErrInvalidArgument)
	}
	if opts.MaxBytes < 0 {
		return nil, fmt.Errorf("open local state %s: MaxBytes %d is negative: %w", path, opts.MaxBytes, ErrInvalidArgument)
	}
	max := opts.MaxBytes
	if max == 0 {
		max = DefaultMaxBytes
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open local state %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open local state %s: held by another process for %s: %w", path, timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open local state %s: %w", path, err)
	}
	// A file created by someone else with a wider mode is narrowed: it is
	// about to hold secrets.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open local state %s: %w", path, err)
	}
	b := &Bolt{path: path, max: max, db: db}
	if err := db.Update(b.init); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open local state %s: %w", path, err)
	}
	return b, nil
}

// init checks or writes the schema version, creates the buckets and
// counts what the store holds.
func (b *Bolt) init(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(metaBucket)
	if err != nil {
		return err
	}
	switch v := meta.Get(schemaKey); {
	case v == nil:
		if err := meta.Put(schemaKey, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return err
		}
	default:
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("schema version %q is not a number: %w", v, ErrSchema)
		}
		if n > SchemaVersion {
			return fmt.Errorf("schema version %d was written by a newer build; this one reads version %d or older: %w", n, SchemaVersion, ErrSchema)
		}
	}
	b.size = 0
	for _, k := range kinds {
		bk, err := tx.CreateBucketIfNotExists([]byte(k))
		if err != nil {
			return err
		}
		if err := bk.ForEach(func(key, value []byte) error {
			b.size += int64(len(key) + len(value))
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// Path returns the file's path.
func (b *Bolt) Path() string { return b.path }

// Size returns the bytes of keys and values the store holds, which the
// bound applies to.
func (b *Bolt) Size() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size
}

// Get returns a copy of the value of key.
func (b *Bolt) Get(kind Kind, key string) ([]byte, bool, error) {
	if err := checkKind(kind); err != nil {
		return nil, false, err
	}
	var out []byte
	var ok bool
	err := b.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte(kind)).Get([]byte(key)); v != nil {
			out, ok = clone(v), true
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("get %s %s: %w", kind, key, err)
	}
	return out, ok, nil
}

// List returns copies of every value of kind.
func (b *Bolt) List(kind Kind) (map[string][]byte, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	err := b.view(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(kind)).ForEach(func(k, v []byte) error {
			out[string(k)] = clone(v)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", kind, err)
	}
	return out, nil
}

func (b *Bolt) view(fn func(*bolt.Tx) error) error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return ErrClosed
	}
	err := b.db.View(fn)
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// Write applies b in one fsynced transaction. A write that would take the
// store past its bound is refused with an error wrapping ErrTooLarge that
// names the bound, and the store is left as it was.
func (b *Bolt) Write(batch Batch) error {
	if err := checkBatch(batch); err != nil {
		return fmt.Errorf("write local state: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("write local state: %w", ErrClosed)
	}
	var delta int64
	err := b.db.Update(func(tx *bolt.Tx) error {
		delta = batchSize(batch, func(k Key) (int, bool) {
			v := tx.Bucket([]byte(k.Kind)).Get([]byte(k.Key))
			return len(v), v != nil
		})
		if delta > 0 && b.size+delta > b.max {
			return tooLarge(b.size+delta, b.max)
		}
		for _, k := range batch.Deletes {
			if err := tx.Bucket([]byte(k.Kind)).Delete([]byte(k.Key)); err != nil {
				return err
			}
		}
		for _, e := range batch.Puts {
			if err := tx.Bucket([]byte(e.Kind)).Put([]byte(e.Key.Key), e.Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write local state %s: %w", b.path, err)
	}
	b.size += delta
	return nil
}

// Close closes the file. It waits for the transactions under way.
func (b *Bolt) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("close local state %s: %w", b.path, err)
	}
	return nil
}

func tooLarge(size, max int64) error {
	return fmt.Errorf("the write would hold %d bytes, past the bound of %d bytes (MaxBytes): %w", size, max, ErrTooLarge)
}
