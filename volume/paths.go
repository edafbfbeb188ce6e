package volume

import (
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EscapeQualifiedName turns a plugin name into a directory name as upstream
// does: "kubernetes.io/empty-dir" → "kubernetes.io~empty-dir".
func EscapeQualifiedName(name string) string { return strings.ReplaceAll(name, "/", "~") }

// UnescapeQualifiedName reverses EscapeQualifiedName.
func UnescapeQualifiedName(name string) string { return strings.ReplaceAll(name, "~", "/") }

// PodDir is <root>/pods/<uid>.
func PodDir(root string, uid types.UID) string {
	return filepath.Join(root, "pods", string(uid))
}

// PodVolumesDir is <root>/pods/<uid>/volumes.
func PodVolumesDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "volumes")
}

// VolumeDir is <root>/pods/<uid>/volumes/<escaped plugin>/<volume>.
func VolumeDir(root string, uid types.UID, plugin, volume string) string {
	return filepath.Join(PodVolumesDir(root, uid), EscapeQualifiedName(plugin), volume)
}

// validUID checks that a pod UID is one plain path element.
func validUID(uid types.UID) error {
	s := string(uid)
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`+"\x00") || len(s) > 255 {
		return fmt.Errorf("%w: pod UID %q is not usable as a directory name", ErrInvalidVolume, s)
	}
	return nil
}

// validVolumeName checks a volume name as the API does (a DNS-1123
// label), which also keeps it one plain path element.
func validVolumeName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%w: volume name %q: %s", ErrInvalidVolume, name, strings.Join(errs, "; "))
	}
	return nil
}

// validateRelativePath checks a path from pod data (an item's path, a
// subPath): relative, no ".." element. what names it in the error.
func validateRelativePath(what, p string) error {
	if p == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalidVolume, what)
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return fmt.Errorf("%w: %s %q must be a relative path", ErrInvalidVolume, what, p)
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("%w: %s %q contains a NUL byte", ErrInvalidVolume, what, p)
	}
	for _, el := range strings.Split(filepath.ToSlash(p), "/") {
		if el == ".." {
			return fmt.Errorf("%w: %s %q must not contain '..'", ErrInvalidVolume, what, p)
		}
	}
	return nil
}
