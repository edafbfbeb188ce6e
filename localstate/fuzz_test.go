package localstate_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// FuzzOpenBolt writes arbitrary bytes as the store's file and checks that
// OpenBolt never panics and returns either a clean error or a usable
// store: one State reads, that takes a write, and that opens again without
// damage. The seeds are a valid store and its damaged copies
// (TestOpenBoltDamaged's damages).
func FuzzOpenBolt(f *testing.F) {
	fx := buildStore(f, filepath.Join(f.TempDir(), "seed.db"), 8)
	data, err := os.ReadFile(fx.path)
	if err != nil {
		f.Fatal(err)
	}
	l := layoutOf(f, fx.path)
	f.Add(data)
	for _, d := range damages() {
		path := filepath.Join(f.TempDir(), "damaged.db")
		d.do(f, path, data, l)
		if damaged, err := os.ReadFile(path); err == nil { // not the directory
			f.Add(damaged)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "localstate.db")
		write(t, path, data)
		b, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: testKey})
		if err != nil {
			// The one refusal bytes can earn: a newer schema version.
			if !errors.Is(err, localstate.ErrSchema) || errors.Is(err, localstate.ErrDamaged) {
				t.Fatalf("OpenBolt = %v, want a store or ErrSchema", err)
			}
			return
		}
		st, err := localstate.New(b)
		if err != nil {
			t.Fatalf("New over the opened store: %v", err)
		}
		_, _ = st.Pods() // a value that does not decode is named, not fatal
		_, _ = st.PodStatuses()
		usable(t, b, path)
	})
}
