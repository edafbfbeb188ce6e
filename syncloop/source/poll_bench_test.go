package source

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// BenchmarkPoll is the file source's check for changes, every PollInterval
// (1s): a directory read and one stat per file.
func BenchmarkPoll(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod-%d.yaml", i)), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			f, err := NewFile(FileOptions{Path: dir, NodeName: "n", Out: make(chan syncloop.PodUpdate)})
			if err != nil {
				b.Fatal(err)
			}
			first := f.fingerprint()
			b.ReportAllocs()
			for b.Loop() {
				if f.fingerprint() != first {
					b.Fatal("fingerprint changed")
				}
			}
		})
	}
}

// BenchmarkPollRead is the read a poll triggers when one file of the
// directory changed: the changed file is read, the others are not.
func BenchmarkPollRead(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("files=%d/changed=1", n), func(b *testing.B) {
			dir := b.TempDir()
			manifest := func(i int, image string) []byte {
				return fmt.Appendf(nil, "apiVersion: v1\nkind: Pod\nmetadata: {name: pod-%d}\nspec:\n  containers: [{name: c, image: %q}]\n", i, image)
			}
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod-%d.yaml", i)), manifest(i, "app:1"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			f, err := NewFile(FileOptions{Path: dir, NodeName: "n", Out: make(chan syncloop.PodUpdate)})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.read(true, nil, nil); err != nil {
				b.Fatal(err)
			}
			images := [2]string{"app:22", "app:333"} // sizes differ: the stat changes
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if err := os.WriteFile(filepath.Join(dir, "pod-0.yaml"), manifest(0, images[i%2]), 0o644); err != nil {
					b.Fatal(err)
				}
				i++
				ps, err := f.read(false, nil, nil)
				if err != nil || len(ps) != n {
					b.Fatalf("read %d pods, %v", len(ps), err)
				}
			}
		})
	}
}
