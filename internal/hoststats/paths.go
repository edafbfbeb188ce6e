package hoststats

import (
	"os"
	"path/filepath"
)

// ExistingParent returns path or its nearest ancestor that exists.
func ExistingParent(path string) string {
	p := filepath.Clean(path)
	for {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
}
