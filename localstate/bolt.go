package localstate

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/utils/clock"
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
	// SecretKey, SecretKeySize bytes, seals the values of Secrets and
	// Tokens at rest with AES-256-GCM (a random nonce per value, bound to
	// its kind and key). Without one the store keeps no secrets and no
	// tokens: their puts are dropped, and those an earlier build kept
	// are deleted at open. Kubernetes promises that a node keeps secrets
	// in memory (tmpfs), never on its disk, and an operator relies on
	// it; the price is that a pod mounting a secret or a projected
	// service account token cannot have that volume set up again by an
	// agent restarted while the API server does not answer. Keep the key
	// away from the disk the file is on (a systemd credential, a tmpfs
	// filled at boot): the key beside the file protects nothing.
	SecretKey SecretKey
	// Logger receives what OpenBolt finds: a damaged file moved aside
	// (error), a meta page that does not validate, an empty file, secrets
	// dropped, no SecretKey (warnings). It never gets a value or the key.
	// nil discards.
	Logger *slog.Logger
	// Clock dates the name of a file moved aside; nil is the real clock.
	Clock clock.PassiveClock
}

// Bolt is a Store in a bbolt file: each Write is one bbolt transaction,
// fsynced before it returns, so a crash at any point leaves the file with
// the transaction either wholly applied or not at all. The file is
// readable by its owner only (0600), and the values of Secrets and Tokens
// in it are sealed with BoltOptions.SecretKey, or not kept. One process
// opens it at a time (bbolt takes a file lock). Safe for concurrent use;
// writes are serialized.
type Bolt struct {
	path     string
	max      int64
	seal     *sealer
	log      *slog.Logger
	recovery *Recovery
	dropped  dropped

	unsealWarned atomic.Bool
	broken       atomic.Pointer[error] // a panic of bbolt after the open

	mu     sync.Mutex // guards size, closed, wedged and the write transactions
	db     *bolt.DB
	size   int64
	closed bool
	wedged bool // bbolt panicked in a write: its locks may be held
}

// dropped counts the values of Secrets and Tokens the open deleted.
type dropped struct{ noKey, clear, otherKey int }

// OpenBolt opens the store at path, creating it (and its directory, 0700)
// when absent, such that no damage to the file can crash the process.
//
// The path is opened without following a symbolic link: a link is refused
// with an error wrapping ErrInvalidArgument that names the path, as is
// anything that is neither a regular file nor a directory (an Lstat
// first; bbolt then opens the file with O_NOFOLLOW, and the file it opened
// must still be the one at the path afterwards). Directories above the
// file are followed: keep them the agent's own.
//
// An existing file is first opened read-only and checked, in a goroutine
// where a memory fault is a recoverable panic: the bounds of every page
// bbolt follows, with no memory map (walkLayout), a read of every key and
// value, bbolt's consistency check (Tx.Check) and the schema version. The
// read-only database is closed, and unmapped, before the file is opened
// for writing. A file that fails (or a directory at the path) is moved
// aside to path.corrupt-<UTC time>, never deleted, logged as an error, and
// the store starts empty: Recovered says so. A file one of whose two meta
// pages does not validate is kept and read from the other, which is as of
// its last write or the one before, as bbolt does; that is logged and
// reported by Recovered too. A file of 0 bytes is a new store (what
// touch, or a hostPath of type FileOrCreate, makes). The checks cost
// 0.1 to 0.15 s for a store filled to DefaultMaxBytes with values of 1 MiB,
// 0.25 to 0.5 s with values of 1 KiB, and under a millisecond for 110 pods
// (docs/localstate.md has the measures).
//
// Not damage, and refused with an error: a file another process holds
// (after LockTimeout), one this process may not read or write, one whose
// schema version is newer than SchemaVersion (ErrSchema: a newer build's
// valid file, which moving aside would take from that build when it runs
// again; the operator decides), a SecretKey of the wrong size. A store
// holding more than the bound is opened (it can shrink), and its writes
// that would not shrink it are refused.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	if path == "" {
		return nil, fmt.Errorf("open local state: empty path: %w", ErrInvalidArgument)
	}
	if opts.MaxBytes < 0 {
		return nil, fmt.Errorf("open local state %s: MaxBytes %d is negative: %w", path, opts.MaxBytes, ErrInvalidArgument)
	}
	b := &Bolt{path: path, max: opts.MaxBytes, log: opts.Logger}
	if b.max == 0 {
		b.max = DefaultMaxBytes
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if opts.SecretKey != nil {
		s, err := newSealer(opts.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("open local state %s: %w", path, err)
		}
		b.seal = s
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open local state %s: %w", path, err)
	}
	if err := b.open(timeout, clk); err != nil {
		return nil, fmt.Errorf("open local state %s: %w", path, err)
	}
	b.logOpen()
	return b, nil
}

// open opens the file, or moves it aside and opens a new one when it is
// damaged.
func (b *Bolt) open(timeout time.Duration, clk clock.PassiveClock) error {
	err := b.openExisting(timeout)
	if !errors.Is(err, ErrDamaged) {
		return err
	}
	aside, mvErr := moveAside(b.path, clk.Now())
	if mvErr != nil {
		return fmt.Errorf("%w; it cannot be moved aside: %w", err, mvErr)
	}
	b.recovery = &Recovery{Path: b.path, Aside: aside, Cause: err}
	b.log.Error("the local state is damaged: moved aside; the node starts without it, and the API server refills it",
		"path", b.path, "aside", aside, "err", err)
	return b.openWrite(nil, false, timeout)
}

// openExisting opens what is at the path: nothing or an empty file is a
// new store; a file is verified first.
func (b *Bolt) openExisting(timeout time.Duration) error {
	info, err := os.Lstat(b.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return b.openWrite(nil, false, timeout)
	case err != nil:
		return err
	case info.Mode()&fs.ModeSymlink != 0:
		return symlinkError(b.path)
	case info.IsDir():
		return damaged(errors.New("a directory is at the path"))
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s): %w", b.path, info.Mode().Type(), ErrInvalidArgument)
	case info.Size() == 0:
		b.log.Warn("the local state file is empty: a new store is written into it (a file created empty, or one that lost all it held)", "path", b.path)
		return b.openWrite(info, false, timeout)
	}
	v, err := verify(b.path, timeout)
	if err != nil {
		return err
	}
	b.log.Debug("local state checked", "path", b.path, "bytes", info.Size(), "leaves", v.leaves, "took", v.took)
	if err := b.openWrite(v.info, v.checkLater, timeout); err != nil {
		return err
	}
	if v.note != nil {
		b.recovery = &Recovery{Path: b.path, Cause: v.note}
		b.log.Warn("a meta page of the local state does not validate (a write cut short by a power loss, or damage): the store is read from the other, as of its last write or the one before",
			"path", b.path, "err", v.note)
	}
	return nil
}

// openWrite opens the file for writing (want, when set, is the file
// verified, which it must still be), narrows its mode and initializes it,
// in a guarded goroutine; with check, it runs Tx.Check after the
// initializing write, which rewrites the meta page whose header was gone.
func (b *Bolt) openWrite(want os.FileInfo, check bool, timeout time.Duration) error {
	var db *bolt.DB
	err := guarded(func() error {
		o := &opener{path: b.path, want: want}
		var d *bolt.DB
		defer func() { o.closeIfLeft(d) }()
		d, err := bolt.Open(b.path, 0o600, &bolt.Options{Timeout: timeout, OpenFile: o.openFile})
		if err != nil {
			return classifyOpen(err, timeout)
		}
		ok := false
		defer func() {
			if !ok {
				_ = d.Close()
			}
		}()
		if err := o.stillThere(); err != nil {
			return err
		}
		// A file created by someone else with a wider mode is narrowed:
		// it is about to hold secrets.
		if err := o.file.Chmod(0o600); err != nil {
			return err
		}
		if err := d.Update(b.init); err != nil {
			return err
		}
		if check {
			if err := d.View(checkTx); err != nil {
				return damaged(err)
			}
		}
		ok, db = true, d
		return nil
	})
	if err != nil {
		return err
	}
	b.db = db
	return nil
}

// logOpen logs what the open did to the secrets and tokens kept.
func (b *Bolt) logOpen() {
	if b.seal == nil {
		b.log.Warn("no SecretKey: the local state keeps no secrets and no service account tokens; a pod that mounts one cannot have that volume set up again after a restart while the API server does not answer",
			"path", b.path, "dropped", b.dropped.noKey)
	}
	if b.dropped.clear > 0 && b.seal != nil {
		b.log.Warn("deleted the secrets and tokens an earlier build kept unsealed; bbolt does not zero the pages it frees: remove the file once to be sure their bytes are gone",
			"path", b.path, "dropped", b.dropped.clear)
	}
	if b.dropped.otherKey > 0 {
		b.log.Warn("deleted the secrets and tokens that do not open with the SecretKey given (another key sealed them); the API server serves them again",
			"path", b.path, "dropped", b.dropped.otherKey)
	}
}

// Recovered returns what OpenBolt did about a damaged file, and whether
// the file was damaged.
func (b *Bolt) Recovered() (Recovery, bool) {
	if b.recovery == nil {
		return Recovery{}, false
	}
	return *b.recovery, true
}

// init writes the schema version (a file that has one was checked by
// verify), creates the buckets, deletes the secrets and tokens that cannot
// stay, and counts what the store holds.
func (b *Bolt) init(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(metaBucket)
	if err != nil {
		return err
	}
	if meta.Get(schemaKey) == nil {
		if err := meta.Put(schemaKey, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return err
		}
	}
	b.size, b.dropped = 0, dropped{}
	for _, k := range kinds {
		bk, err := tx.CreateBucketIfNotExists([]byte(k))
		if err != nil {
			return err
		}
		if sealedKind(k) {
			if err := b.purge(k, bk); err != nil {
				return err
			}
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

// purge deletes the values of bk (a sealed kind) that cannot stay: all of
// them without a key, else those not sealed (an earlier build's) and those
// that do not open with the key.
func (b *Bolt) purge(kind Kind, bk *bolt.Bucket) error {
	var drop [][]byte
	c := bk.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		switch {
		case v == nil: // a nested bucket: none of ours
			continue
		case b.seal == nil:
			b.dropped.noKey++
		case !isSealed(v):
			b.dropped.clear++
		default:
			if _, err := b.seal.open(Key{kind, string(k)}, v); err == nil {
				continue
			}
			b.dropped.otherKey++
		}
		drop = append(drop, clone(k))
	}
	for _, k := range drop {
		if err := bk.Delete(k); err != nil {
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

// Get returns a copy of the value of key. A value of Secrets or Tokens
// that does not open with the key is absent (logged once).
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
	if ok && sealedKind(kind) {
		out, ok = b.unseal(Key{kind, key}, out)
	}
	return out, ok, nil
}

// List returns copies of every value of kind; a value of Secrets or
// Tokens that does not open with the key is left out (logged once).
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
	if sealedKind(kind) {
		for k, v := range out {
			if v, ok := b.unseal(Key{kind, k}, v); ok {
				out[k] = v
			} else {
				delete(out, k)
			}
		}
	}
	return out, nil
}

// unseal opens a value of a sealed kind. The open deleted those that do
// not open, so a failure here is a value damaged since: it is absent, and
// the first is logged.
func (b *Bolt) unseal(k Key, v []byte) ([]byte, bool) {
	if b.seal == nil {
		return nil, false
	}
	out, err := b.seal.open(k, v)
	if err != nil {
		if b.unsealWarned.CompareAndSwap(false, true) {
			b.log.Warn("a secret or token kept does not open with the SecretKey: it is treated as absent (logged once)", "path", b.path, "kind", k.Kind, "key", k.Key)
		}
		return nil, false
	}
	return out, true
}

func (b *Bolt) view(fn func(*bolt.Tx) error) error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return ErrClosed
	}
	err := b.guard(func() error { return b.db.View(fn) })
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// guard runs fn, a transaction on the open file, with memory faults made
// panics, and returns a panic as an error wrapping ErrDamaged (the file
// was damaged under the running store); from then on every call fails with
// it, and the next OpenBolt checks the file.
func (b *Bolt) guard(fn func() error) (err error) {
	if p := b.broken.Load(); p != nil {
		return *p
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			broken := damaged(fmt.Errorf("bbolt panicked: %v", r))
			b.broken.CompareAndSwap(nil, &broken)
			err = broken
			b.log.Error("the local state failed under the running store; it refuses every call until it is opened again", "path", b.path, "err", err)
		}
	}()
	return fn()
}

// Write applies b in one fsynced transaction. A write that would take the
// store past its bound is refused with an error wrapping ErrTooLarge that
// names the bound, and the store is left as it was. Values of Secrets and
// Tokens are sealed with the key, or dropped without one.
func (b *Bolt) Write(batch Batch) error {
	if err := checkBatch(batch); err != nil {
		return fmt.Errorf("write local state: %w", err)
	}
	batch = b.sealBatch(batch)
	if len(batch.Puts) == 0 && len(batch.Deletes) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("write local state: %w", ErrClosed)
	}
	var delta int64
	err := b.guard(func() error {
		b.wedged = true // until Update returns: a panic skips the reset
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
		b.wedged = false
		return err
	})
	if err != nil {
		return fmt.Errorf("write local state %s: %w", b.path, err)
	}
	b.size += delta
	return nil
}

// sealBatch returns batch with the values of sealed kinds sealed, or,
// without a key, left out.
func (b *Bolt) sealBatch(batch Batch) Batch {
	i := slices.IndexFunc(batch.Puts, func(e Entry) bool { return sealedKind(e.Kind) })
	if i < 0 {
		return batch
	}
	puts := slices.Clone(batch.Puts[:i])
	for _, e := range batch.Puts[i:] {
		switch {
		case !sealedKind(e.Kind):
		case b.seal == nil:
			continue
		default:
			e.Value = b.seal.seal(e.Key, e.Value)
		}
		puts = append(puts, e)
	}
	batch.Puts = puts
	return batch
}

// Close closes the file. It waits for the transactions under way. After
// bbolt panicked in a Write (the file damaged under the running store) it
// leaves the file alone, since bbolt may hold its own locks still: the
// file lock and memory map go with the process.
func (b *Bolt) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.wedged {
		return fmt.Errorf("close local state %s: %w", b.path, *b.broken.Load())
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("close local state %s: %w", b.path, err)
	}
	return nil
}

func tooLarge(size, max int64) error {
	return fmt.Errorf("the write would hold %d bytes, past the bound of %d bytes (MaxBytes): %w", size, max, ErrTooLarge)
}
