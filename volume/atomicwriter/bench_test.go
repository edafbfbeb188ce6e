package atomicwriter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubeletkit/kubeletkit/volume/atomicwriter"
)

// BenchmarkWrite writes a configMap of 100 keys of 1 KiB into a real
// directory (t.TempDir, so the disk of the machine): "changed" writes a new
// version every time (a new data directory, the swap, the old one removed),
// "unchanged" is the periodic refresh of content that did not change (read
// and compare only).
func BenchmarkWrite(b *testing.B) {
	for _, keys := range []int{100} {
		payload := func(v int) map[string]atomicwriter.File {
			p := make(map[string]atomicwriter.File, keys)
			for k := 0; k < keys; k++ {
				p[fmt.Sprintf("key-%03d.conf", k)] = atomicwriter.File{Data: []byte(fmt.Sprintf("%d%s", v, strings.Repeat("x", 1023)))}
			}
			return p
		}
		b.Run(fmt.Sprintf("keys=%d/changed", keys), func(b *testing.B) {
			w := atomicwriter.New(b.TempDir(), atomicwriter.Options{})
			p := [2]map[string]atomicwriter.File{payload(0), payload(1)}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if changed, err := w.Write(p[i%2]); err != nil || !changed {
					b.Fatal(changed, err)
				}
			}
		})
		b.Run(fmt.Sprintf("keys=%d/unchanged", keys), func(b *testing.B) {
			w := atomicwriter.New(b.TempDir(), atomicwriter.Options{})
			p := payload(0)
			if _, err := w.Write(p); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if changed, err := w.Write(p); err != nil || changed {
					b.Fatal(changed, err)
				}
			}
		})
	}
}
