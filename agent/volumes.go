package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/volume"
)

// envSources are where containers' environment references to configMaps
// and secrets (envFrom, configMapKeyRef, secretKeyRef) are resolved: the
// volume sources (an API server's, or the caller's), else the object
// manifests of Sources.ObjectPath. Without either there are none, and such a
// reference fails as it does under upstream kubelet without an API server.
// Call it after newVolumes.
func (b *blocks) envSources() (containerconfig.ConfigMapGetter, containerconfig.SecretGetter) {
	if s := b.opts.Cluster.VolumeSources; s.ConfigMaps != nil || s.Secrets != nil || s.Tokens != nil {
		return s.ConfigMaps, s.Secrets
	}
	if b.objects != nil && b.opts.Sources.ObjectPath != "" {
		return b.objects, b.objects
	}
	return nil, nil
}

// newVolumes builds the volume manager: every pod's volumes under
// RootDir/pods/<uid>/volumes, with configMaps and secrets from
// Options.Cluster.VolumeSources or, failing that, from the object manifests,
// and claims and persistent volumes from Options.Cluster.VolumeSources.Claims.
func (b *blocks) newVolumes() (*volume.Manager, error) {
	sources := b.opts.Cluster.VolumeSources
	if sources.ConfigMaps == nil && sources.Secrets == nil && sources.Tokens == nil {
		b.objects = &volume.StaticSources{}
		// Claims stay the cluster's: the object manifests hold none.
		sources = volume.Sources{ConfigMaps: b.objects, Secrets: b.objects, Claims: sources.Claims}
	}
	// Secrets live on a tmpfs and subPaths are pinned by bind mounts, as
	// upstream; an agent that cannot mount keeps secrets in the root dir
	// and hands subPaths over unpinned instead, and says so.
	// On the embedded fake runtime no container sees a mount: nothing to
	// warn about.
	cannotMount := b.opts.Security.NoMounts
	if cannotMount && b.fakeRT == nil {
		b.log.Warn("The agent does not mount (not running as root, or Security.NoMounts): secret and projected volumes are kept on disk under the root dir instead of a tmpfs, and subPaths are not pinned by bind mounts", "rootDir", b.opts.RootDir)
	}
	view := b.view
	return volume.New(volume.Options{
		RootDir:          b.opts.RootDir,
		Sources:          sources,
		CSIDrivers:       b.csi.Lookup,
		NodeName:         b.opts.NodeName,
		NodeAllocatable:  b.allocatable,
		SecretsOnDisk:    cannotMount,
		UnpinnedSubPaths: cannotMount,
		SourcesReady:     b.sourcesReady,
		// A restarted agent's pods keep what their volumes hold until
		// their workers ask for them: the emptyDirs' files, the tmpfs
		// mounts their running containers see.
		ActivePod: func(uid types.UID) bool {
			_, ok := view.pods.GetPodByUID(uid)
			return ok && !view.workers.IsPodKnownTerminated(uid)
		},
		Clock:         b.clock,
		RefreshPeriod: b.opts.Timings.VolumeRefresh,
		Recorder:      b.events,
		Metrics:       volumeMetrics(b.metrics),
		Logger:        b.log.With("component", "volumes"),
	})
}

// objectLoader keeps the in-memory configMaps and secrets in step with the
// object manifest directory: each file holds one ConfigMap or Secret (YAML
// or JSON); a file that cannot be read is reported by name and skipped.
type objectLoader struct {
	dir    string        // Sources.ObjectPath
	period time.Duration // Timings.SourcePeriod; 20s when zero
	into   *volume.StaticSources
	pods   *syncloop.PodSet
	vol    *volume.Manager
	clock  Clock
	log    *slog.Logger
	cms    map[string]*v1.ConfigMap // as last read, by namespace/name
	secs   map[string]*v1.Secret
}

// loadObjects reads the object manifests once, for Run to do before the
// pod sources start: a static pod's first sync then finds the objects its
// volumes and environment name.
func (b *blocks) loadObjects() *objectLoader {
	l := &objectLoader{dir: b.opts.Sources.ObjectPath, period: b.opts.Timings.SourcePeriod, into: b.objects,
		pods: b.view.pods, vol: b.vol, clock: b.clock, log: b.log,
		cms: map[string]*v1.ConfigMap{}, secs: map[string]*v1.Secret{}}
	l.load()
	return l
}

// run reads the object manifests again every SourcePeriod until ctx
// ends.
func (l *objectLoader) run(ctx context.Context) error {
	period := l.period
	if period == 0 {
		period = 20 * time.Second
	}
	t := l.clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		l.load()
	}
}

// load reads the directory and applies what changed.
func (l *objectLoader) load() {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		l.log.Warn("Cannot read the object manifest directory", "path", l.dir, "err", err)
		return
	}
	cms, secs := map[string]*v1.ConfigMap{}, map[string]*v1.Secret{}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(l.dir, e.Name())
		if err := readObject(file, cms, secs); err != nil {
			// Never the content: a secret's bytes must not reach the log.
			l.log.Warn("Ignoring an object manifest", "file", file, "err", err)
		}
	}
	changed := apply(l.cms, cms, l.into.SetConfigMap, func(cm *v1.ConfigMap) { l.into.DeleteConfigMap(cm.Namespace, cm.Name) })
	changed = apply(l.secs, secs, l.into.SetSecret, func(s *v1.Secret) { l.into.DeleteSecret(s.Namespace, s.Name) }) || changed
	l.cms, l.secs = cms, secs
	if changed {
		// Content volumes are written again at once rather than at the
		// next refresh period.
		for _, p := range l.pods.GetPods() {
			l.vol.Refresh(p)
		}
	}
}

// apply sets the objects of cur that are new or changed since old and
// deletes those gone, and reports whether anything changed.
func apply[T any](old, cur map[string]*T, set func(*T), del func(*T)) bool {
	changed := false
	for key, o := range cur {
		if prev, ok := old[key]; !ok || !reflect.DeepEqual(prev, o) {
			set(o)
			changed = true
		}
	}
	for key, o := range old {
		if _, ok := cur[key]; !ok {
			del(o)
			changed = true
		}
	}
	return changed
}

// readObject decodes one ConfigMap or Secret manifest into the maps, keyed
// by namespace/name ("default" when the manifest names none).
func readObject(file string, cms map[string]*v1.ConfigMap, secs map[string]*v1.Secret) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(js, &tm); err != nil {
		return fmt.Errorf("not an object: %w", err)
	}
	key := func(m *metav1.ObjectMeta) (string, error) {
		if m.Name == "" {
			return "", fmt.Errorf("%s has no name", tm.Kind)
		}
		if m.Namespace == "" {
			m.Namespace = metav1.NamespaceDefault
		}
		return m.Namespace + "/" + m.Name, nil
	}
	switch {
	case tm.APIVersion == "v1" && tm.Kind == "ConfigMap":
		cm := &v1.ConfigMap{}
		if err := yaml.UnmarshalStrict(js, cm); err != nil {
			return fmt.Errorf("ConfigMap: %w", err)
		}
		k, err := key(&cm.ObjectMeta)
		if err != nil {
			return err
		}
		cms[k] = cm
	case tm.APIVersion == "v1" && tm.Kind == "Secret":
		s := &v1.Secret{}
		if err := yaml.UnmarshalStrict(js, s); err != nil {
			// The decoder's message may quote the data; say only where.
			return fmt.Errorf("Secret: cannot decode the manifest")
		}
		k, err := key(&s.ObjectMeta)
		if err != nil {
			return err
		}
		// stringData is written into data, as the API server does.
		for name, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[name] = []byte(v)
		}
		s.StringData = nil
		secs[k] = s
	default:
		return fmt.Errorf("kind %q of apiVersion %q: only v1 ConfigMap and Secret are read", tm.Kind, tm.APIVersion)
	}
	return nil
}
