package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// hostPathPlugin is the hostPath plugin: the container mounts the host's
// path itself. It also mounts hostPath persistent volumes, read-only when
// the claim's volume says so.
type hostPathPlugin struct{}

var (
	_ Plugin           = (*hostPathPlugin)(nil)
	_ PersistentPlugin = (*hostPathPlugin)(nil)
)

func (hostPathPlugin) Name() string                    { return HostPathPluginName }
func (hostPathPlugin) CanSupport(spec *v1.Volume) bool { return spec.HostPath != nil }

func (hostPathPlugin) CanSupportPersistent(pv *v1.PersistentVolume) bool {
	return pv.Spec.HostPath != nil
}

// SetUp checks the path against its type, creating it for
// DirectoryOrCreate (0755) and FileOrCreate (0644, with its parent
// directories), with upstream's messages.
func (hostPathPlugin) SetUp(_ context.Context, v *Volume) (Mounted, error) {
	hp, readOnly := v.Spec.HostPath, false
	if v.PersistentVolume != nil {
		hp, readOnly = v.PersistentVolume.Spec.HostPath, v.ReadOnly
	}
	if hp.Path == "" || !filepath.IsAbs(hp.Path) {
		return Mounted{}, fmt.Errorf("%w: hostPath path %q must be absolute", ErrInvalidVolume, hp.Path)
	}
	for _, el := range strings.Split(hp.Path, "/") {
		if el == ".." {
			return Mounted{}, fmt.Errorf("%w: hostPath path %q must not contain '..'", ErrInvalidVolume, hp.Path)
		}
	}
	typ := v1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	if err := checkHostPathType(hp.Path, typ); err != nil {
		return Mounted{}, err
	}
	return Mounted{HostPath: hp.Path, ReadOnly: readOnly}, nil
}

// TearDown does nothing: the host's path is not the pod's.
func (hostPathPlugin) TearDown(context.Context, *Volume) error { return nil }

func checkHostPathType(path string, typ v1.HostPathType) error {
	failed := func(what string) error {
		return fmt.Errorf("hostPath type check failed: %s is not a %s", path, what)
	}
	fi, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("hostPath type check failed: %s: %w", path, err)
	}
	switch typ {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("hostPath: create directory %s: %w", path, err)
			}
			return nil
		}
		if !fi.IsDir() {
			return failed("directory")
		}
	case v1.HostPathDirectory:
		if !exists || !fi.IsDir() {
			return failed("directory")
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fmt.Errorf("hostPath: create directory of %s: %w", path, err)
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("hostPath: create file %s: %w", path, err)
			}
			if f != nil {
				_ = f.Close()
			}
			return nil
		}
		if !fi.Mode().IsRegular() {
			return failed("file")
		}
	case v1.HostPathFile:
		if !exists || !fi.Mode().IsRegular() {
			return failed("file")
		}
	case v1.HostPathSocket:
		if !exists || fi.Mode()&fs.ModeSocket == 0 {
			return failed("socket file")
		}
	case v1.HostPathCharDev:
		if !exists || fi.Mode()&fs.ModeCharDevice == 0 {
			return failed("character device")
		}
	case v1.HostPathBlockDev:
		if !exists || fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0 {
			return failed("block device")
		}
	default:
		return fmt.Errorf("%w: hostPath type %q", ErrUnsupported, typ)
	}
	return nil
}
