package localstate_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/kubeletkit/kubeletkit/localstate"
)

func put(kind localstate.Kind, key, value string) localstate.Entry {
	return localstate.Entry{Key: localstate.Key{Kind: kind, Key: key}, Value: []byte(value)}
}

// stores are the implementations the contract tests run on.
func stores(t *testing.T, max int64) map[string]localstate.Store {
	t.Helper()
	b, err := localstate.OpenBolt(filepath.Join(t.TempDir(), "s.db"), localstate.BoltOptions{MaxBytes: max, SecretKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return map[string]localstate.Store{"bolt": b, "memory": localstate.NewMemory(max)}
}

func TestStoreContract(t *testing.T) {
	for name, s := range stores(t, 0) {
		t.Run(name, func(t *testing.T) {
			if err := s.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.Pods, "a", "1"), put(localstate.Pods, "b", "2"), put(localstate.Secrets, "ns/s", "x")}}); err != nil {
				t.Fatal(err)
			}
			v, ok, err := s.Get(localstate.Pods, "a")
			if err != nil || !ok || string(v) != "1" {
				t.Fatalf("Get a = %q %v %v", v, ok, err)
			}
			if _, ok, _ := s.Get(localstate.ConfigMaps, "a"); ok {
				t.Fatal("kinds are not separate")
			}
			if err := s.Write(localstate.Batch{Deletes: []localstate.Key{{Kind: localstate.Pods, Key: "a"}, {Kind: localstate.Pods, Key: "absent"}}, Puts: []localstate.Entry{put(localstate.Pods, "b", "3")}}); err != nil {
				t.Fatal(err)
			}
			all, err := s.List(localstate.Pods)
			if err != nil || len(all) != 1 || string(all["b"]) != "3" {
				t.Fatalf("List = %q %v", all, err)
			}
			all["b"][0] = 'X' // the caller's copy
			if v, _, _ := s.Get(localstate.Pods, "b"); string(v) != "3" {
				t.Fatalf("List handed out the store's bytes: %q", v)
			}
			for _, bad := range []localstate.Batch{
				{Puts: []localstate.Entry{put("nodes", "a", "1")}},
				{Puts: []localstate.Entry{put(localstate.Pods, "", "1")}},
				{Deletes: []localstate.Key{{Kind: "nodes", Key: "a"}}},
			} {
				if err := s.Write(bad); err == nil {
					t.Errorf("Write(%v) = nil, want an error", bad)
				}
			}
			if _, err := s.List("nodes"); !errors.Is(err, localstate.ErrUnknownKind) {
				t.Errorf("List(nodes) = %v, want ErrUnknownKind", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.Pods, "c", "1")}}); !errors.Is(err, localstate.ErrClosed) {
				t.Errorf("Write after Close = %v, want ErrClosed", err)
			}
			if _, _, err := s.Get(localstate.Pods, "b"); !errors.Is(err, localstate.ErrClosed) {
				t.Errorf("Get after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestStoreBound(t *testing.T) {
	for name, s := range stores(t, 100) {
		t.Run(name, func(t *testing.T) {
			big := strings.Repeat("x", 60)
			if err := s.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.ConfigMaps, "ns/a", big)}}); err != nil {
				t.Fatal(err)
			}
			// 64 + 64 > 100: refused whole, naming the bound, nothing changed.
			err := s.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.Pods, "p", "1"), put(localstate.ConfigMaps, "ns/b", big)}})
			if !errors.Is(err, localstate.ErrTooLarge) || !strings.Contains(err.Error(), "100 bytes") {
				t.Fatalf("Write past the bound = %v, want ErrTooLarge naming 100 bytes", err)
			}
			if _, ok, _ := s.Get(localstate.Pods, "p"); ok {
				t.Fatal("a refused write changed the store")
			}
			// Replacing the big value with another as big fits; a delete
			// then makes room.
			if err := s.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.ConfigMaps, "ns/a", big)}}); err != nil {
				t.Fatalf("replace = %v", err)
			}
			if err := s.Write(localstate.Batch{Deletes: []localstate.Key{{Kind: localstate.ConfigMaps, Key: "ns/a"}}, Puts: []localstate.Entry{put(localstate.ConfigMaps, "ns/b", big)}}); err != nil {
				t.Fatalf("delete and put = %v", err)
			}
		})
	}
}

func TestBoltReopenKeepsSizeAndBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	b, err := localstate.OpenBolt(path, localstate.BoltOptions{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.Pods, "a", strings.Repeat("x", 79))}}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	b, err = localstate.OpenBolt(path, localstate.BoltOptions{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Size() != 80 {
		t.Fatalf("Size after reopen = %d, want 80", b.Size())
	}
	if err := b.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.Pods, "bb", strings.Repeat("x", 20))}}); !errors.Is(err, localstate.ErrTooLarge) {
		t.Fatalf("Write = %v, want ErrTooLarge", err)
	}
}

// A newer schema version is refused and the file left as it is (a newer
// build's valid store); one that is not a number is damage, moved aside.
func TestBoltSchema(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		refused       bool
		movedAside    bool
	}{
		{"current", "1", false, false},
		{"older", "0", false, false},
		{"newer", "2", true, false},
		{"garbage", "two", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error {
				m, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				return m.Put([]byte("schema"), []byte(tc.version))
			}); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			s, err := localstate.OpenBolt(path, localstate.BoltOptions{})
			if tc.refused {
				if !errors.Is(err, localstate.ErrSchema) || errors.Is(err, localstate.ErrDamaged) {
					t.Fatalf("OpenBolt = %v, want ErrSchema", err)
				}
				if !strings.Contains(err.Error(), "schema version 2 was written by a newer build") {
					t.Fatalf("OpenBolt = %v, want it to name the version", err)
				}
				if _, err := os.Stat(path); err != nil {
					t.Fatalf("the newer store was moved: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rec, ok := s.Recovered()
			if ok != tc.movedAside || (ok && (rec.Aside == "" || !errors.Is(rec.Cause, localstate.ErrSchema))) {
				t.Fatalf("Recovered = %v %v, want moved aside %v", rec, ok, tc.movedAside)
			}
		})
	}
}

func TestBoltFileModeAndLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "s.db")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil { // created by someone else, readable by all
		t.Fatal(err)
	}
	s, err := localstate.OpenBolt(path, localstate.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600: the file holds secrets", info.Mode().Perm())
	}
	// A second opener (another agent on the same root) is refused after
	// the lock timeout, with a message that says why.
	_, err = localstate.OpenBolt(path, localstate.BoltOptions{LockTimeout: 1})
	if err == nil || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("second OpenBolt = %v, want held by another process", err)
	}
}

func TestOpenBoltArguments(t *testing.T) {
	if _, err := localstate.OpenBolt("", localstate.BoltOptions{}); !errors.Is(err, localstate.ErrInvalidArgument) {
		t.Errorf("empty path: %v", err)
	}
	if _, err := localstate.OpenBolt(filepath.Join(t.TempDir(), "s.db"), localstate.BoltOptions{MaxBytes: -1}); !errors.Is(err, localstate.ErrInvalidArgument) {
		t.Errorf("negative bound: %v", err)
	}
	if _, err := localstate.New(nil); !errors.Is(err, localstate.ErrInvalidArgument) {
		t.Errorf("New(nil): %v", err)
	}
}
