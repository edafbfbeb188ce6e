package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Manager keeps the volumes of the node's pods: WaitForMount makes a pod's
// volumes desired and waits until they are set up, RemovePod and
// WaitForUnmount make them not desired, and Run's reconciler does the work.
type Manager struct {
	opts    Options
	log     *slog.Logger
	clock   clock.WithTicker
	plugins []Plugin
	byName  map[string]Plugin
	tokens  *tokenCache
	kick    chan struct{}
	running atomic.Bool
	busy    atomic.Int64 // operations started and not yet completed

	mu      sync.Mutex
	core    *reconciler
	changed chan struct{} // closed and replaced whenever the state changes
	buf     []operation
}

// New returns a Manager. It fails, wrapping ErrInvalidOptions, without a
// RootDir or with a negative duration, a nil plugin or two plugins of one
// name. It starts nothing and touches no file.
func New(opts Options) (*Manager, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	m := &Manager{
		opts:    opts,
		log:     opts.Logger,
		clock:   opts.Clock,
		kick:    make(chan struct{}, 1),
		core:    newReconciler(opts.RefreshPeriod, opts.ActivePod),
		changed: make(chan struct{}),
		byName:  map[string]Plugin{},
	}
	m.tokens = &tokenCache{src: func() TokenSource { return opts.Sources.Tokens }, now: m.clock.Now}
	src := opts.Sources
	builtin := []Plugin{
		&emptyDirPlugin{mounter: opts.Mounter, allocatable: opts.NodeAllocatable},
		hostPathPlugin{},
		&contentPlugin{name: ConfigMapPluginName, supports: func(s *v1.Volume) bool { return s.ConfigMap != nil },
			payload: configMapPayload(src.ConfigMaps), mounter: opts.Mounter, now: m.clock.Now},
		&contentPlugin{name: SecretPluginName, supports: func(s *v1.Volume) bool { return s.Secret != nil },
			payload: secretPayload(src.Secrets), memory: !opts.SecretsOnDisk, mounter: opts.Mounter, now: m.clock.Now},
		&contentPlugin{name: DownwardAPIPluginName, supports: func(s *v1.Volume) bool { return s.DownwardAPI != nil },
			payload: downwardAPIPayload(opts.NodeAllocatable), mounter: opts.Mounter, now: m.clock.Now},
		&contentPlugin{name: ProjectedPluginName, supports: func(s *v1.Volume) bool { return s.Projected != nil },
			payload: projectedPayload(src, m.tokens, opts.NodeAllocatable), memory: !opts.SecretsOnDisk, mounter: opts.Mounter, now: m.clock.Now},
		newCSIPlugin(opts, m.deviceOp),
		imagePlugin{},
		&localPlugin{mounter: opts.Mounter, now: m.clock.Now, statfs: statfs},
	}
	for _, p := range opts.Plugins {
		name := p.Name()
		if _, dup := m.byName[name]; dup {
			return nil, fmt.Errorf("%w: two plugins are named %q", ErrInvalidOptions, name)
		}
		if name == "" || name == "." || name == ".." || strings.ContainsRune(EscapeQualifiedName(name), filepath.Separator) {
			return nil, fmt.Errorf("%w: plugin name %q is not usable as a directory name", ErrInvalidOptions, name)
		}
		m.byName[name] = p
		m.plugins = append(m.plugins, p)
	}
	for _, p := range builtin {
		if _, replaced := m.byName[p.Name()]; !replaced {
			m.byName[p.Name()] = p
			m.plugins = append(m.plugins, p)
		}
	}
	return m, nil
}

// resolve finds each volume's plugin, and the persistent volume of each
// claim's volume (read once while the pod is desired); a volume that
// cannot be processed carries its error.
func (m *Manager) resolve(ctx context.Context, pod *v1.Pod) []desiredVol {
	vols := make([]desiredVol, len(pod.Spec.Volumes))
	uidErr := validUID(pod.UID)
	seen := make(map[string]int, len(vols))
	for i := range pod.Spec.Volumes {
		seen[pod.Spec.Volumes[i].Name]++
	}
	for i := range pod.Spec.Volumes {
		spec := &pod.Spec.Volumes[i]
		dv := &vols[i]
		dv.spec = spec
		switch {
		case uidErr != nil:
			dv.err = uidErr
		case seen[spec.Name] > 1:
			dv.err = fmt.Errorf("%w: volume name %q is used more than once", ErrInvalidVolume, spec.Name)
		default:
			dv.err = validVolumeName(spec.Name)
		}
		if dv.err != nil {
			continue
		}
		if claim, ok := ClaimName(pod, spec); ok {
			m.resolveBound(ctx, pod, dv, claim)
			continue
		}
		for _, p := range m.plugins {
			if p.CanSupport(spec) {
				dv.plugin = p
				break
			}
		}
		if dv.plugin == nil {
			dv.err = fmt.Errorf("%w: no volume plugin supports volume %q", ErrUnsupported, spec.Name)
			continue
		}
		dv.metric = QualifiedPluginName(dv.plugin.Name(), spec, nil)
		if r, ok := dv.plugin.(Remounter); ok {
			dv.remount = r.RequiresRemount(spec)
		}
	}
	checkDirs(vols)
	return vols
}

// resolveBound resolves a claim's volume: the bound persistent volume
// (the one found before while the pod stays desired) and the plugin that
// supports it.
func (m *Manager) resolveBound(ctx context.Context, pod *v1.Pod, dv *desiredVol, claim string) {
	m.mu.Lock()
	b := m.core.boundClaim(pod.UID, dv.spec.Name, claim)
	m.mu.Unlock()
	if b == nil {
		nb, err := resolveClaim(ctx, m.opts.Sources.Claims, pod, dv.spec)
		if err != nil {
			dv.err = err
			return
		}
		b = &nb
	}
	for _, p := range m.plugins {
		if pp, ok := p.(PersistentPlugin); ok && pp.CanSupportPersistent(b.pv) {
			dv.plugin, dv.bound = p, b
			dv.metric = QualifiedPluginName(p.Name(), nil, b.pv)
			return
		}
	}
	dv.err = fmt.Errorf("%w: no volume plugin supports persistent volume %q of volume %q", ErrUnsupported, b.pv.Name, dv.spec.Name)
}

// checkDirs fails the volumes whose directory another volume of the pod
// already has: two claims bound to one persistent volume, or a volume
// named as another's persistent volume (upstream merges the first into
// one volume; here the second fails to process).
func checkDirs(vols []desiredVol) {
	type key struct{ plugin, dir string }
	seen := make(map[key]string, len(vols))
	for i := range vols {
		dv := &vols[i]
		if dv.err != nil || dv.plugin == nil {
			continue
		}
		k := key{dv.plugin.Name(), dv.dirName()}
		if other, dup := seen[k]; dup {
			dv.err = fmt.Errorf("%w: volume %q would use the directory of volume %q (%s)", ErrUnsupported, dv.spec.Name, other, k.dir)
			continue
		}
		seen[k] = dv.spec.Name
	}
}

// notify wakes the reconciler; never blocks.
func (m *Manager) notify() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// changedLocked wakes the waiters. m.mu must be held.
func (m *Manager) changedLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// WaitForMount makes pod's volumes desired and waits until all are set up
// (by Run's reconciler), ctx ends or MountTimeout passes. The error names
// the volumes as upstream does,
//
//	unmounted volumes=[cfg], unattached volumes=[], failed to process volumes=[]: timed out waiting for the condition; volume "cfg": configmap "app" not found
//
// followed by each volume's last error. A volume that cannot be processed
// at all (no plugin, invalid name) fails at once instead of at the
// timeout, with an error wrapping ErrUnsupported or ErrInvalidVolume; a
// timeout wraps ErrTimeout. Either way a FailedMount event is recorded on
// the pod ("Unable to attach or mount volumes: ..."). If the pod is
// removed (RemovePod, WaitForUnmount) meanwhile, the error wraps
// ErrPodRemoved. Calling it again for
// a pod already desired updates the pod (its labels, for downwardAPI).
func (m *Manager) WaitForMount(ctx context.Context, pod *v1.Pod) error {
	if pod == nil || len(pod.Spec.Volumes) == 0 {
		return nil
	}
	vols := m.resolve(ctx, pod)
	m.mu.Lock()
	m.core.setPod(pod, vols)
	m.mu.Unlock()
	m.notify()

	timer := m.clock.NewTimer(m.opts.MountTimeout)
	defer timer.Stop()
	for {
		m.mu.Lock()
		st := m.core.mountState(pod.UID)
		ch := m.changed
		m.mu.Unlock()
		if st.done() {
			return nil
		}
		if st.removed {
			return fmt.Errorf("pod %s: %w", pod.UID, ErrPodRemoved)
		}
		var cause error
		if len(st.failed) > 0 {
			cause = st.errs[st.failed[0]]
		} else {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				cause = ctx.Err()
			case <-timer.C():
				cause = ErrTimeout
			}
			m.mu.Lock()
			st = m.core.mountState(pod.UID)
			m.mu.Unlock()
			if st.done() {
				return nil
			}
		}
		err := mountError(st, cause)
		if ctx.Err() == nil {
			m.event(pod, v1.EventTypeWarning, EventFailedMount, "Unable to attach or mount volumes: %v", err)
		}
		return err
	}
}

// mountError formats WaitForMount's error; a volume whose last error
// wraps ErrNotAttached is also listed as unattached.
func mountError(st podMountState, cause error) error {
	unmounted, failed, unattached := st.unmounted, st.failed, []string{}
	if unmounted == nil {
		unmounted = []string{}
	}
	if failed == nil {
		failed = []string{}
	}
	for _, name := range unmounted {
		if err := st.errs[name]; err != nil && errors.Is(err, ErrNotAttached) {
			unattached = append(unattached, name)
		}
	}
	prefix := fmt.Sprintf("unmounted volumes=%v, unattached volumes=%v, failed to process volumes=%v", unmounted, unattached, failed)
	if len(st.failed) > 0 {
		// The cause is one volume's error, also in the reasons.
		return fmt.Errorf("%s: %w", prefix, &reasonsError{st.reasons(), cause, st.errList()})
	}
	if r := st.reasons(); r != "" {
		return fmt.Errorf("%s: %w", prefix, &reasonsError{cause.Error() + "; " + r, cause, st.errList()})
	}
	return fmt.Errorf("%s: %w", prefix, cause)
}

// reasonsError carries a message and unwraps to the cause and to each
// volume's error, so errors.Is finds both ErrTimeout and, say, a NotFound.
type reasonsError struct {
	msg   string
	cause error
	errs  []error
}

func (e *reasonsError) Error() string   { return e.msg }
func (e *reasonsError) Unwrap() []error { return append([]error{e.cause}, e.errs...) }

// WaitForUnmount makes pod's volumes not desired (as RemovePod) and waits
// until they are all torn down, ctx ends or MountTimeout passes; the error
// reads "mounted volumes=[...]: ..." as upstream's, with the last error of
// each volume whose tear down failed.
func (m *Manager) WaitForUnmount(ctx context.Context, pod *v1.Pod) error {
	if pod == nil {
		return nil
	}
	m.RemovePod(pod.UID)
	timer := m.clock.NewTimer(m.opts.MountTimeout)
	defer timer.Stop()
	for {
		m.mu.Lock()
		mounted := m.core.mountedVolumes(pod.UID)
		ch := m.changed
		m.mu.Unlock()
		if len(mounted) == 0 {
			return nil
		}
		var cause error
		select {
		case <-ch:
			continue
		case <-ctx.Done():
			cause = ctx.Err()
		case <-timer.C():
			cause = ErrTimeout
		}
		m.mu.Lock()
		st := m.core.unmountState(pod.UID)
		m.mu.Unlock()
		return unmountError(mounted, st, cause)
	}
}

// unmountError formats WaitForUnmount's error: upstream's "mounted
// volumes=[...]: <cause>", followed by the last tear down error of each
// volume that has one, which errors.Is and errors.As also find.
func unmountError(mounted []string, st podMountState, cause error) error {
	if r := st.reasons(); r != "" {
		return fmt.Errorf("mounted volumes=%v: %w", mounted, &reasonsError{cause.Error() + "; " + r, cause, st.errList()})
	}
	return fmt.Errorf("mounted volumes=%v: %w", mounted, cause)
}

// RemovePod makes the pod's volumes not desired: the reconciler tears them
// down (emptyDir and secret data are removed) and then removes the pod's
// empty volume directories. It does not wait.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	m.core.removePod(uid)
	m.changedLocked()
	m.mu.Unlock()
	m.tokens.forget(uid)
	m.notify()
}

// Refresh makes the reconciler write the pod's configMap, secret,
// downwardAPI and projected volumes again from their sources now, rather
// than at the next RefreshPeriod; it reports whether the pod is desired.
func (m *Manager) Refresh(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	m.mu.Lock()
	ok := m.core.refreshPod(pod.UID)
	m.mu.Unlock()
	m.notify()
	return ok
}

// Run reconciles every ReconcilePeriod and after every change until ctx
// ends, then waits for the operations in flight (which see ctx end) and
// returns nil. It first rebuilds the actual state from the volume
// directories on disk, so that a restarted agent neither sets up twice nor
// leaks what it set up before. A second Run returns ErrAlreadyRunning.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	m.reconstruct()
	ticker := m.clock.NewTicker(m.opts.ReconcilePeriod)
	defer ticker.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		m.reconcile(ctx, &wg)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		case <-m.kick:
		}
	}
}

// reconcile plans and starts the operations, one goroutine each.
func (m *Manager) reconcile(ctx context.Context, wg *sync.WaitGroup) {
	ready := m.opts.SourcesReady()
	m.mu.Lock()
	m.buf = m.core.plan(m.clock.Now(), ready, m.buf[:0])
	ops := m.buf
	m.mu.Unlock()
	m.busy.Add(int64(len(ops)))
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.perform(ctx, op)
		}()
	}
}

// perform does one operation and records its result.
func (m *Manager) perform(ctx context.Context, op operation) {
	var (
		res Mounted
		err error
	)
	switch op.kind {
	case opSetUp:
		v := &Volume{PodUID: op.uid, Name: op.name, Dir: VolumeDir(m.opts.RootDir, op.uid, op.plugin.Name(), op.dirName()), Pod: op.pod, Spec: op.spec,
			PersistentVolume: op.pv, ReadOnly: op.readOnly}
		start := m.clock.Now()
		res, err = op.plugin.SetUp(ctx, v)
		m.observeSetUp(ctx, op, start, err)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("volume set up failed", "pod", op.pod.Namespace+"/"+op.pod.Name, "uid", op.uid, "volume", op.name, "plugin", op.plugin.Name(), "err", err)
				m.event(op.pod, v1.EventTypeWarning, EventFailedMount, "MountVolume.SetUp failed for volume %q : %v", op.dirName(), err)
			}
		} else if !op.remount {
			m.log.Info("volume set up", "pod", op.pod.Namespace+"/"+op.pod.Name, "uid", op.uid, "volume", op.name, "plugin", op.plugin.Name())
		}
	case opTearDown:
		v := &Volume{PodUID: op.uid, Name: op.name, Dir: VolumeDir(m.opts.RootDir, op.uid, op.plugin.Name(), op.dirName())}
		start := m.clock.Now()
		// The subPaths pinned in the volume go first, as upstream's
		// CleanSubPaths before TearDown.
		if err = m.cleanSubPaths(op.uid, op.name); err == nil {
			err = op.plugin.TearDown(ctx, v)
		}
		m.observe(ctx.Err(), OpUnmount, op.metric, start, err)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("volume tear down failed", "uid", op.uid, "volume", op.name, "plugin", op.plugin.Name(), "err", err)
			}
		} else {
			m.log.Info("volume torn down", "uid", op.uid, "volume", op.name, "plugin", op.plugin.Name())
		}
	case opCleanPodDir:
		if err = m.cleanPodDir(op.uid); err != nil {
			m.log.Warn("pod volume directory not removed", "uid", op.uid, "err", err)
		}
	}
	m.mu.Lock()
	m.core.complete(op, res, err, m.clock.Now())
	m.changedLocked()
	m.mu.Unlock()
	m.busy.Add(-1)
	m.notify()
}

// cleanPodDir removes the empty directories a gone pod's volumes leave:
// <pod>/volumes/<plugin>, <pod>/volumes and, if then empty, <pod>. It
// only removes empty directories: anything left there (another agent
// part's files, a volume of an unknown plugin) stays.
func (m *Manager) cleanPodDir(uid types.UID) error {
	vdir := PodVolumesDir(m.opts.RootDir, uid)
	entries, err := os.ReadDir(vdir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var errs []error
	for _, e := range entries {
		if err := os.Remove(filepath.Join(vdir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(vdir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	// The pod directory may hold other parts' files (container
	// termination logs); it goes only when empty.
	_ = os.Remove(PodDir(m.opts.RootDir, uid))
	return errors.Join(errs...)
}

// reconstruct records the volume directories found on disk.
func (m *Manager) reconstruct() {
	podsDir := filepath.Join(m.opts.RootDir, "pods")
	pods, err := os.ReadDir(podsDir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			m.log.Warn("cannot read pods directory", "dir", podsDir, "err", err)
		}
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, p := range pods {
		if !p.IsDir() {
			continue
		}
		uid := types.UID(p.Name())
		m.core.addPodDir(uid)
		plugins, _ := os.ReadDir(PodVolumesDir(m.opts.RootDir, uid))
		for _, pl := range plugins {
			plugin := m.byName[UnescapeQualifiedName(pl.Name())]
			vols, _ := os.ReadDir(filepath.Join(PodVolumesDir(m.opts.RootDir, uid), pl.Name()))
			for _, v := range vols {
				if plugin == nil {
					m.log.Warn("volume of an unknown plugin left alone", "uid", uid, "plugin", UnescapeQualifiedName(pl.Name()), "volume", v.Name())
					continue
				}
				m.core.addReconstructed(uid, v.Name(), plugin, reconstructedName(plugin, filepath.Join(PodVolumesDir(m.opts.RootDir, uid), pl.Name(), v.Name())))
				n++
			}
		}
	}
	if n > 0 {
		m.log.Info("volumes found on disk", "count", n)
	}
}

// event records an event if there is a recorder.
func (m *Manager) event(pod *v1.Pod, typ, reason, format string, args ...interface{}) {
	if m.opts.Recorder != nil && pod != nil {
		m.opts.Recorder.Eventf(pod, typ, reason, format, args...)
	}
}
