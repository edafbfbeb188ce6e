package pluginmanager_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kubeletkit/kubeletkit/pluginmanager"
)

// BenchmarkSyncEmpty is a node's pass over a registry with no plugin, what
// every agent pays each second (upstream's reconciler period).
func BenchmarkSyncEmpty(b *testing.B) {
	dir, err := os.MkdirTemp("", "pm")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	m, err := pluginmanager.New(pluginmanager.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Sync(ctx)
	}
}

// BenchmarkReconcile decides over 20 registered plugins, all present.
func BenchmarkReconcile(b *testing.B) {
	present := map[string]pluginmanager.Socket{}
	registered := map[string]pluginmanager.Registered{}
	for i := range 20 {
		s := pluginmanager.Socket{Path: "/r/" + string(rune('a'+i)) + ".sock", ID: "1"}
		present[s.Path] = s
		registered[s.Path] = pluginmanager.Registered{Socket: s, Type: "CSIPlugin", Name: s.Path}
	}
	b.ReportAllocs()
	for b.Loop() {
		if a := pluginmanager.Reconcile(present, registered, nil, time.Time{}); len(a) != 0 {
			b.Fatal(a)
		}
	}
}
