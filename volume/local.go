package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// localPlugin mounts local persistent volumes (spec.local) as upstream's
// kubernetes.io/local-volume: the persistent volume's path is bind-mounted
// on the pod's volume directory, <pod>/volumes/kubernetes.io~local-volume/<pv>,
// read-only ("ro") when the claim's volume says so, and the pod's fsGroup
// applied to a writable one. A path that is a block device (which upstream
// formats and mounts) is ErrUnsupported. Measure gives statfs(2) of the
// mount.
type localPlugin struct {
	mounter Mounter
	now     func() time.Time                  // Measure's timestamps
	statfs  func(path string) (statFS, error) // statfs(2); tests script it
}

var (
	_ Plugin           = (*localPlugin)(nil)
	_ PersistentPlugin = (*localPlugin)(nil)
)

func (*localPlugin) Name() string               { return LocalPluginName }
func (*localPlugin) CanSupport(*v1.Volume) bool { return false }

func (*localPlugin) CanSupportPersistent(pv *v1.PersistentVolume) bool {
	return pv.Spec.Local != nil
}

// SetUp bind-mounts the path on the volume directory unless something is
// mounted there already.
func (p *localPlugin) SetUp(_ context.Context, v *Volume) (Mounted, error) {
	src := v.PersistentVolume.Spec.Local.Path
	if !filepath.IsAbs(src) || strings.Contains("/"+src+"/", "/../") {
		return Mounted{}, fmt.Errorf("%w: local volume path %q must be absolute without '..'", ErrInvalidVolume, src)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return Mounted{}, fmt.Errorf("local volume %s: %w", v.PersistentVolume.Name, err)
	}
	if fi.Mode()&fs.ModeDevice != 0 {
		return Mounted{}, fmt.Errorf("%w: local volume %s: %s is a block device", ErrUnsupported, v.PersistentVolume.Name, src)
	}
	if err := os.MkdirAll(v.Dir, 0o750); err != nil {
		return Mounted{}, err
	}
	mounted, err := p.mounter.IsMountPoint(v.Dir)
	if err != nil {
		return Mounted{}, fmt.Errorf("check mount point %s: %w", v.Dir, err)
	}
	if !mounted {
		opts := []string{"bind"}
		if v.ReadOnly {
			opts = append(opts, "ro")
		}
		if err := p.mounter.Mount(src, v.Dir, "", opts); err != nil {
			return Mounted{}, fmt.Errorf("mount local volume %s: %w", v.PersistentVolume.Name, err)
		}
	}
	if !v.ReadOnly {
		fsGroup, policy := podFSGroup(v.Pod)
		if err := setOwnership(v.Dir, fsGroup, policy, false); err != nil {
			return Mounted{}, fmt.Errorf("local volume %s: fsGroup: %w", v.PersistentVolume.Name, err)
		}
	}
	return Mounted{HostPath: v.Dir, ReadOnly: v.ReadOnly, SELinuxRelabel: true}, nil
}

// TearDown unmounts the volume directory if something is mounted there
// and removes it; what the bind mount showed stays on the host's path.
func (p *localPlugin) TearDown(_ context.Context, v *Volume) error {
	mounted, err := p.mounter.IsMountPoint(v.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check mount point %s: %w", v.Dir, err)
	}
	if mounted {
		if err := p.mounter.Unmount(v.Dir); err != nil {
			return err
		}
	}
	return removeEmpty(v.Dir)
}
