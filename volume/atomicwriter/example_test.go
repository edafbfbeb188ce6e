package atomicwriter_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeletkit/kubeletkit/volume/atomicwriter"
)

// A configMap-like volume is written twice: the second payload drops one
// key, adds another and changes a third, and the reader only ever sees whole
// sets through the user-visible symlinks. Writing the same payload again
// changes nothing.
func Example() {
	dir, err := os.MkdirTemp("", "atomicwriter-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	w := atomicwriter.New(dir, atomicwriter.Options{})
	show := func(changed bool, err error) {
		if err != nil {
			panic(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			panic(err)
		}
		fmt.Println("changed:", changed)
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, "..") {
				continue // ..data and the timestamped data directory
			}
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				panic(err)
			}
			fmt.Printf("  %s = %q\n", name, b)
		}
	}

	show(w.Write(map[string]atomicwriter.File{
		"color": {Data: []byte("blue")},
		"size":  {Data: []byte("10")},
	}))
	second := map[string]atomicwriter.File{
		"color": {Data: []byte("red")},
		"shape": {Data: []byte("round"), Mode: 0o600},
	}
	show(w.Write(second))
	show(w.Write(second))

	target, err := os.Readlink(filepath.Join(dir, "color"))
	if err != nil {
		panic(err)
	}
	fmt.Println("color ->", target)
	_, err = w.Write(map[string]atomicwriter.File{"../escape": {Data: []byte("x")}})
	fmt.Println("invalid path refused:", errors.Is(err, atomicwriter.ErrInvalidPath))
	// Output:
	// changed: true
	//   color = "blue"
	//   size = "10"
	// changed: true
	//   color = "red"
	//   shape = "round"
	// changed: false
	//   color = "red"
	//   shape = "round"
	// color -> ..data/color
	// invalid path refused: true
}
