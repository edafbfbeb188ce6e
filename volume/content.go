package volume

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/volume/atomicwriter"
)

// defaultMode is the mode of configMap, secret, downwardAPI and projected
// files when the pod sets none (the API's defaultMode).
const defaultMode int32 = 0o644

// payloadFunc builds the files of a content volume.
type payloadFunc func(ctx context.Context, v *Volume) (map[string]atomicwriter.File, error)

// contentPlugin is a volume whose files are written from sources with the
// atomic writer: configMap, secret, downwardAPI and projected.
type contentPlugin struct {
	name     string
	supports func(*v1.Volume) bool
	payload  payloadFunc
	memory   bool // on a tmpfs, as upstream for secret and projected
	mounter  Mounter
	now      func() time.Time
}

var (
	_ Plugin    = (*contentPlugin)(nil)
	_ Remounter = (*contentPlugin)(nil)
)

func (p *contentPlugin) Name() string                    { return p.name }
func (p *contentPlugin) CanSupport(spec *v1.Volume) bool { return p.supports(spec) }

// RequiresRemount is true: content follows its sources.
func (p *contentPlugin) RequiresRemount(*v1.Volume) bool { return true }

// SetUp builds the payload first (so a missing source creates nothing),
// then the directory (a tmpfs for secret and projected unless
// Options.SecretsOnDisk), then writes the payload atomically; with the
// pod's fsGroup, the volume is the group's (read-only bits) before new data
// becomes visible.
func (p *contentPlugin) SetUp(ctx context.Context, v *Volume) (Mounted, error) {
	files, err := p.payload(ctx, v)
	if err != nil {
		return Mounted{}, err
	}
	if p.memory {
		if err := setUpTmpfs(p.mounter, v.Dir, nil); err != nil {
			return Mounted{}, err
		}
	}
	if err := makeDir(v.Dir, emptyDirPerm); err != nil {
		return Mounted{}, err
	}
	opts := atomicwriter.Options{Now: p.now}
	if fsGroup, policy := podFSGroup(v.Pod); fsGroup != nil {
		// The whole volume, new data included, before the data becomes
		// visible; read-only, as these volumes are.
		opts.SetPerms = func(string) error { return setOwnership(v.Dir, fsGroup, policy, true) }
	}
	if _, err := atomicwriter.New(v.Dir, opts).Write(files); err != nil {
		return Mounted{}, err
	}
	return Mounted{HostPath: v.Dir, ReadOnly: true, SELinuxRelabel: true}, nil
}

// TearDown unmounts and removes the directory.
func (p *contentPlugin) TearDown(_ context.Context, v *Volume) error {
	return tearDownDir(p.mounter, v.Dir)
}

// fileMode checks a mode from pod data and picks it or the default.
func fileMode(what string, mode *int32, def int32) (fs.FileMode, error) {
	m := def
	if mode != nil {
		m = *mode
	}
	if m < 0 || m > 0o777 {
		return 0, fmt.Errorf("%w: %s mode %#o is out of range 0-0777", ErrInvalidVolume, what, m)
	}
	return fs.FileMode(m), nil
}

// addFile adds a file to a payload after checking its path, refusing a
// path given twice.
func addFile(files map[string]atomicwriter.File, what, path string, data []byte, mode fs.FileMode) error {
	if err := validateRelativePath(what+" path", path); err != nil {
		return err
	}
	if err := atomicwriter.ValidatePath(path); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidVolume, what, err)
	}
	if _, dup := files[path]; dup {
		return fmt.Errorf("%w: %s: path %q is given twice", ErrInvalidVolume, what, path)
	}
	files[path] = atomicwriter.File{Data: data, Mode: mode}
	return nil
}

// keyedPayload writes data's keys (all, or items) into files: the shape
// shared by configMap and secret volumes and projections.
func keyedPayload(files map[string]atomicwriter.File, kind string, data map[string][]byte, items []v1.KeyToPath, def int32, optional bool) error {
	if len(items) == 0 {
		mode, err := fileMode(kind+" defaultMode", nil, def)
		if err != nil {
			return err
		}
		for k, b := range data {
			if err := addFile(files, kind+" key", k, b, mode); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s references non-existent %s key: %s", kind, kindKeyWord(kind), it.Key)
		}
		mode, err := fileMode(kind+" item "+it.Key, it.Mode, def)
		if err != nil {
			return err
		}
		if err := addFile(files, kind+" item "+it.Key, it.Path, b, mode); err != nil {
			return err
		}
	}
	return nil
}

// kindKeyWord gives upstream's wording: "configmap references non-existent
// config key", "secret references non-existent secret key".
func kindKeyWord(kind string) string {
	if kind == "configmap" {
		return "config"
	}
	return kind
}

func defaultOr(mode *int32) int32 {
	if mode == nil {
		return defaultMode
	}
	return *mode
}
