package localstate

import (
	"errors"
	"maps"
	"slices"
	"sync"
)

// Kind names a set of kept objects, a bucket of the store.
type Kind string

// The kinds the node keeps.
const (
	// Pods are the pods bound to the node as the API server last sent
	// them, keyed by UID.
	Pods Kind = "pods"
	// ConfigMaps are the configMaps the pods' volumes and environment
	// read, keyed by namespace/name.
	ConfigMaps Kind = "configmaps"
	// Secrets are the secrets the pods' volumes and environment read,
	// keyed by namespace/name.
	Secrets Kind = "secrets"
	// Tokens are the service account tokens issued for the pods'
	// projected volumes, keyed by TokenKey.
	Tokens Kind = "tokens"
	// PodStatuses are the pod statuses the API server has not
	// acknowledged yet, keyed by pod UID.
	PodStatuses Kind = "podstatuses"
	// Services are the cluster's services, for the containers' service
	// environment variables, keyed by namespace/name.
	Services Kind = "services"
)

// kinds are every kind a store holds, in a fixed order.
var kinds = [...]Kind{Pods, ConfigMaps, Secrets, Tokens, PodStatuses, Services}

// Kinds returns every kind a store holds, in a fixed order.
func Kinds() []Kind { return slices.Clone(kinds[:]) }

// Errors wrapped by the stores' and State's errors.
var (
	// ErrUnknownKind is a kind that is none of Kinds().
	ErrUnknownKind = errors.New("unknown kind")
	// ErrTooLarge is a write that would take the store past its bound;
	// the store is left as it was.
	ErrTooLarge = errors.New("local state too large")
	// ErrSchema is a store written by a newer schema than this build
	// reads, or one whose schema version is unreadable.
	ErrSchema = errors.New("unsupported local state schema")
	// ErrClosed is a call on a closed store.
	ErrClosed = errors.New("local state closed")
	// ErrInvalidArgument is a bad argument (an empty path or key, a
	// negative bound, a key of the wrong size), or a path OpenBolt
	// refuses: a symbolic link, a file that is neither regular nor a
	// directory.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrDamaged is a store file that bbolt cannot open, that fails the
	// checks OpenBolt runs, or that bbolt panicked on; see Recovery.
	ErrDamaged = errors.New("local state damaged")
)

// Batch is one atomic write: every Put and Delete is applied, or none.
type Batch struct {
	// Puts are the values to write.
	Puts []Entry
	// Deletes are the keys to remove; an absent key is no error.
	Deletes []Key
}

// Key names one value.
type Key struct {
	Kind Kind
	Key  string
}

// Entry is one value to write.
type Entry struct {
	Key
	Value []byte
}

// Store keeps the node's local state: byte values under a kind and a key.
// Write is atomic and, for a store on disk, durable when it returns: after
// a crash at any point the store holds either everything a Write wrote or
// none of it. Implementations are safe for concurrent use. Bolt is the
// implementation on disk, Memory the one in memory.
type Store interface {
	// Get returns the value of key, and whether it exists. The slice is
	// the caller's.
	Get(kind Kind, key string) ([]byte, bool, error)
	// List returns every value of kind by key. The slices are the
	// caller's.
	List(kind Kind) (map[string][]byte, error)
	// Write applies b atomically. A write that would take the store past
	// its bound fails with an error wrapping ErrTooLarge and changes
	// nothing.
	Write(b Batch) error
	// Close releases the store; later calls fail with ErrClosed.
	Close() error
}

var (
	_ Store = (*Bolt)(nil)
	_ Store = (*Memory)(nil)
)

func checkKind(k Kind) error {
	for _, known := range kinds {
		if k == known {
			return nil
		}
	}
	return &kindError{k}
}

type kindError struct{ kind Kind }

func (e *kindError) Error() string { return "kind " + string(e.kind) + ": " + ErrUnknownKind.Error() }
func (e *kindError) Unwrap() error { return ErrUnknownKind }

func checkBatch(b Batch) error {
	for _, e := range b.Puts {
		if err := checkKind(e.Kind); err != nil {
			return err
		}
		if e.Key.Key == "" {
			return errors.Join(ErrInvalidArgument, errors.New("empty key in "+string(e.Kind)))
		}
	}
	for _, k := range b.Deletes {
		if err := checkKind(k.Kind); err != nil {
			return err
		}
	}
	return nil
}

// batchSize is what b adds to a store whose sizes are current: each put's
// key and value, less what it replaces, less each delete.
func batchSize(b Batch, current func(Key) (int, bool)) int64 {
	var delta int64
	seen := map[Key]int{}
	size := func(k Key) (int, bool) {
		if n, ok := seen[k]; ok {
			return n, n >= 0
		}
		return current(k)
	}
	for _, k := range b.Deletes {
		if n, ok := size(k); ok {
			delta -= int64(len(k.Key) + n)
		}
		seen[k] = -1
	}
	for _, e := range b.Puts {
		if n, ok := size(e.Key); ok {
			delta -= int64(len(e.Key.Key) + n)
		}
		delta += int64(len(e.Key.Key) + len(e.Value))
		seen[e.Key] = len(e.Value)
	}
	return delta
}

// Memory is a Store in memory, for tests and for agents that keep no state
// across restarts. Its bound counts keys and values as Bolt's does. Safe
// for concurrent use.
type Memory struct {
	max int64

	mu     sync.Mutex
	data   map[Kind]map[string][]byte
	size   int64
	closed bool
	writes int
}

// NewMemory returns an empty Memory holding at most max bytes of keys and
// values; 0 means DefaultMaxBytes.
func NewMemory(max int64) *Memory {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	m := &Memory{max: max, data: map[Kind]map[string][]byte{}}
	for _, k := range kinds {
		m.data[k] = map[string][]byte{}
	}
	return m
}

// Get returns a copy of the value of key.
func (m *Memory) Get(kind Kind, key string) ([]byte, bool, error) {
	if err := checkKind(kind); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	v, ok := m.data[kind][key]
	return clone(v), ok, nil
}

// List returns copies of every value of kind.
func (m *Memory) List(kind Kind) (map[string][]byte, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	out := make(map[string][]byte, len(m.data[kind]))
	for k, v := range m.data[kind] {
		out[k] = clone(v)
	}
	return out, nil
}

// Write applies b, or nothing when it would exceed the bound.
func (m *Memory) Write(b Batch) error {
	if err := checkBatch(b); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	delta := batchSize(b, func(k Key) (int, bool) {
		v, ok := m.data[k.Kind][k.Key]
		return len(v), ok
	})
	if delta > 0 && m.size+delta > m.max {
		return tooLarge(m.size+delta, m.max)
	}
	for _, k := range b.Deletes {
		delete(m.data[k.Kind], k.Key)
	}
	for _, e := range b.Puts {
		m.data[e.Kind][e.Key.Key] = clone(e.Value)
	}
	m.size += delta
	m.writes++
	return nil
}

// Writes returns how many Writes succeeded.
func (m *Memory) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// Close closes the store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// Snapshot returns a copy of everything the store holds.
func (m *Memory) Snapshot() map[Kind]map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Kind]map[string][]byte{}
	for k, vs := range m.data {
		out[k] = maps.Clone(vs)
	}
	return out
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}
