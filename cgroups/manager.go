package cgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// Driver names how cgroups are created: upstream's cgroupDriver.
type Driver string

// The cgroup drivers.
const (
	// DriverCgroupfs writes the cgroup file system directly.
	DriverCgroupfs Driver = "cgroupfs"
	// DriverSystemd asks systemd for slices over D-Bus
	// (kubepods.slice, kubepods-burstable.slice,
	// kubepods-burstable-pod<uid>.slice), then writes their files too, as
	// upstream's systemd driver does.
	DriverSystemd Driver = "systemd"
)

// Errors of this package, for errors.Is.
var (
	// ErrInvalidOptions is wrapped by New's errors for options it cannot
	// use.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrSystemdDriver: the systemd driver cannot reach systemd over
	// D-Bus (Start wraps it with the cause).
	ErrSystemdDriver = errors.New("the systemd cgroup driver needs systemd's D-Bus API")
	// ErrInvalidName: a name component (a pod UID) that cannot name a
	// cgroup.
	ErrInvalidName = errors.New("invalid cgroup name")
	// ErrNoCgroups: no cgroup file system at the root.
	ErrNoCgroups = errors.New("no cgroup file system")
	// ErrNotStarted: the Manager's Start has not succeeded yet.
	ErrNotStarted = errors.New("cgroup manager not started")
	// ErrNotOwned: Destroy was asked to remove a cgroup this Manager
	// did not make (see Options.StateDir); it is left alone.
	ErrNotOwned = errors.New("cgroup not made by this manager")
)

// The names upstream gives the hierarchy.
const (
	// NodeAllocatableName is the cgroup of all pods, under the cgroup
	// root: kubepods. Guaranteed pods are its children.
	NodeAllocatableName = "kubepods"
	// PodPrefix starts a pod cgroup's name: pod<uid>.
	PodPrefix = "pod"
)

// Options configure a Manager.
type Options struct {
	// Root is where the cgroup file system is mounted; empty means
	// /sys/fs/cgroup. Tests point it at a directory tree (and set Remove).
	Root string
	// Driver is the cgroup driver; empty means DriverCgroupfs. With
	// Runtime set, it is only the fallback.
	Driver Driver
	// Runtime, when set, is asked for its cgroup driver by the first
	// Start, before anything is made (RuntimeDriver: upstream's
	// KubeletCgroupDriverFromCRI, GA since 1.34): the runtime's driver
	// replaces Driver, which stays only when the runtime does not
	// implement RuntimeConfig (containerd 1.6) or names no Linux
	// configuration. Start fails when the runtime cannot answer. Nil
	// uses Driver as it is.
	Runtime RuntimeConfigGetter
	// Clock times the waits between the calls to Runtime; nil means the
	// real clock.
	Clock clock.Clock
	// CgroupRoot is the cgroup the hierarchy goes under (upstream's
	// cgroupRoot), as a cgroupfs path; empty means "/". Its components
	// must pass ValidComponent.
	CgroupRoot string
	// StateDir is a directory of this agent's own (the agent's is
	// RootDir/cgroups) where the Manager records each pod cgroup it
	// makes, one empty file per cgroup under StateDir/<driver>, at the
	// cgroup's cgroupfs path; it is created when needed. The Manager
	// removes only the pod cgroups it recorded (Destroy,
	// CleanupOrphans): those of another agent on the host are left
	// alone, and logged once. A Manager started with the StateDir of an
	// earlier one (the agent restarted) owns what that one made. Empty
	// keeps the record in memory: a new Manager owns nothing an earlier
	// one made, and leaves it. Two Managers must not share a StateDir.
	StateDir string
	// Pod configures every pod cgroup (CFS quota and period, pids limit).
	Pod PodOptions
	// ExclusiveCPUs, when set (cpumanager.Manager), lifts the CFS quota of
	// the cgroup of a pod that holds exclusive CPUs, as upstream's
	// DisableCPUQuotaWithExclusiveCPUs (on by default) does.
	ExclusiveCPUs ExclusiveCPUs
	// Logger receives the manager's logs; nil discards them.
	Logger *slog.Logger
	// Kill ends a process left in a cgroup being removed; nil means
	// SIGKILL.
	Kill func(pid int) error
	// Remove removes one empty cgroup directory; nil means rmdir(2),
	// which a cgroup file system needs (its control files cannot be
	// unlinked). A plain directory tree standing for one in a test needs
	// os.RemoveAll.
	Remove func(dir string) error
	// Systemd is systemd's D-Bus API for DriverSystemd; nil means Start
	// connects to the machine's systemd (DialSystemd: its private socket
	// as root, else the system bus) and Close disconnects. The Manager
	// does not close a Systemd it was given.
	Systemd Systemd
}

// Manager keeps upstream's cgroup hierarchy for pods: the node's pods
// under kubepods (limited to the node's allocatable), the Burstable pods
// under kubepods/burstable and the BestEffort ones under
// kubepods/besteffort (their CPU shares following the pods), Guaranteed
// pods directly under kubepods; one cgroup per pod, created before its
// sandbox and removed once its containers are gone. Its methods are safe
// for concurrent use; New does no I/O, Start does the first.
type Manager struct {
	opts  Options
	log   *slog.Logger
	root  Name    // the node allocatable cgroup: CgroupRoot/kubepods
	owned *owners // the pod cgroups this Manager made

	mu     sync.Mutex
	driver Driver         // Options.Driver, or the runtime's after Start
	fs     *fsDriver      // nil before Start
	sd     *systemdDriver // with DriverSystemd, after Start
	dialed *SystemdConn   // the connection Start made, for Close
}

// New checks opts and returns a Manager; it touches nothing.
func New(opts Options) (*Manager, error) {
	switch opts.Driver {
	case "":
		opts.Driver = DriverCgroupfs
	case DriverCgroupfs:
	case DriverSystemd:
	default:
		return nil, fmt.Errorf("cgroups: unknown driver %q (cgroupfs or systemd): %w", opts.Driver, ErrInvalidOptions)
	}
	if opts.Root == "" {
		opts.Root = "/sys/fs/cgroup"
	}
	if opts.Pod.CPUPeriod == 0 {
		opts.Pod.CPUPeriod = QuotaPeriod
	}
	if opts.Pod.CPUPeriod < MinQuota || opts.Pod.CPUPeriod > 1000000 {
		return nil, fmt.Errorf("cgroups: CPU period %dµs is not between 1ms and 1s: %w", opts.Pod.CPUPeriod, ErrInvalidOptions)
	}
	var root Name
	for _, c := range ParseCgroupfs(opts.CgroupRoot) {
		var err error
		if root, err = root.Child(c); err != nil {
			return nil, fmt.Errorf("cgroups: cgroup root %q: %w", opts.CgroupRoot, err)
		}
	}
	root, _ = root.Child(NodeAllocatableName)
	if opts.Kill == nil {
		opts.Kill = func(pid int) error {
			p, err := os.FindProcess(pid)
			if err != nil {
				return err
			}
			return p.Kill()
		}
	}
	if opts.Remove == nil {
		opts.Remove = os.Remove
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var records string
	if opts.StateDir != "" {
		records = filepath.Join(opts.StateDir, string(opts.Driver))
	}
	return &Manager{opts: opts, log: log, root: root, owned: newOwners(records), driver: opts.Driver}, nil
}

// Start finds the cgroup file system (and, with the systemd driver,
// connects to systemd), creates (or updates) kubepods with node, the
// config NodeConfig gives for the node's allocatable, and the burstable
// and besteffort cgroups under it (besteffort with MinShares). It may be
// called again, with a new node config. With Options.Runtime, the first
// Start asks the runtime for its cgroup driver before anything else (see
// Options.Runtime), and fails when it cannot answer.
func (m *Manager) Start(ctx context.Context, node ResourceConfig) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs == nil {
		if m.opts.Runtime != nil {
			d, err := RuntimeDriver(ctx, m.opts.Runtime, m.opts.Driver, m.opts.Clock, m.log)
			if err != nil {
				return err
			}
			if d != m.driver && m.opts.StateDir != "" {
				m.owned = newOwners(filepath.Join(m.opts.StateDir, string(d)))
			}
			m.driver = d
		}
		fs, err := openFS(m.opts.Root, m.opts.Remove, m.opts.Kill)
		if err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		fs.systemd = m.driver == DriverSystemd
		parent := m.root[:len(m.root)-1]
		if !fs.present(parent) {
			return fmt.Errorf("cgroups: cgroup root %s does not exist", fs.rel(parent))
		}
		if err := m.owned.load(fs.gone); err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		if fs.systemd {
			sd, err := m.connectSystemd(ctx, fs)
			if err != nil {
				return fmt.Errorf("cgroups: %w", err)
			}
			m.sd = sd
		}
		m.fs = fs
	}
	if err := m.ensure(m.root, node); err != nil {
		return fmt.Errorf("cgroups: node allocatable cgroup: %w", err)
	}
	minShares := uint64(MinShares)
	for _, q := range []struct {
		class v1.PodQOSClass
		rc    ResourceConfig
	}{{v1.PodQOSBurstable, ResourceConfig{}}, {v1.PodQOSBestEffort, ResourceConfig{CPUShares: &minShares}}} {
		if err := m.ensure(m.qosName(q.class), q.rc); err != nil {
			return fmt.Errorf("cgroups: %s cgroup: %w", strings.ToLower(string(q.class)), err)
		}
	}
	m.log.Info("Cgroup hierarchy ready", "root", spell(m.driver, m.root), "driver", m.driver, "version", m.fs.version())
	return nil
}

// connectSystemd dials systemd unless Options.Systemd is set, and reads
// its version.
func (m *Manager) connectSystemd(ctx context.Context, fs *fsDriver) (*systemdDriver, error) {
	sd := m.opts.Systemd
	if sd == nil {
		c, err := DialSystemd("")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSystemdDriver, err)
		}
		m.dialed, sd = c, c
	}
	version, err := sd.Version(ctx)
	if err != nil {
		if m.dialed != nil {
			m.dialed.Close()
			m.dialed = nil
		}
		return nil, fmt.Errorf("%w: systemd's version: %w", ErrSystemdDriver, err)
	}
	return &systemdDriver{fs: fs, sd: sd, version: version, log: m.log}, nil
}

// Close disconnects from systemd when Start connected; the cgroups stay.
// The Manager is not to be used after.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dialed == nil {
		return nil
	}
	err := m.dialed.Close()
	m.dialed = nil
	return err
}

// ensure creates n with rc, or writes rc to it when it exists.
func (m *Manager) ensure(n Name, rc ResourceConfig) error {
	if m.fs.exists(n) {
		return m.set(n, rc)
	}
	return m.create(n, rc)
}

// create, set and destroy go through the driver in use.
func (m *Manager) create(n Name, rc ResourceConfig) error {
	if m.sd != nil {
		return m.sd.create(n, rc)
	}
	return m.fs.create(n, rc)
}

func (m *Manager) set(n Name, rc ResourceConfig) error {
	if m.sd != nil {
		return m.sd.set(n, rc)
	}
	return m.fs.set(n, rc)
}

func (m *Manager) destroy(n Name) error {
	if m.sd != nil {
		return m.sd.destroy(n)
	}
	return m.fs.destroy(n)
}

// Version is the cgroup version in use (1 or 2), 0 before Start.
func (m *Manager) Version() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs == nil {
		return 0
	}
	return m.fs.version()
}

// qosName is the parent cgroup of the pods of a QoS class.
func (m *Manager) qosName(class v1.PodQOSClass) Name {
	switch class {
	case v1.PodQOSBurstable:
		n, _ := m.root.Child("burstable")
		return n
	case v1.PodQOSBestEffort:
		n, _ := m.root.Child("besteffort")
		return n
	}
	return m.root
}

// PodName is the name of the pod's cgroup:
// kubepods[/burstable|/besteffort]/pod<uid>. A UID that cannot be one
// component of a cgroup name is an error wrapping ErrInvalidName.
func (m *Manager) PodName(pod *v1.Pod) (Name, error) {
	n, err := m.qosName(podspec.QOSClass(pod)).Child(PodPrefix + string(pod.UID))
	if err == nil {
		err = ValidComponent(string(pod.UID))
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return n, nil
}

// CgroupParent is what the pod's sandbox config names as its cgroup parent:
// the pod cgroup as the driver spells it.
func (m *Manager) CgroupParent(pod *v1.Pod) (string, error) {
	n, err := m.PodName(pod)
	if err != nil {
		return "", err
	}
	return spell(m.Driver(), n), nil
}

// Driver is the driver the Manager uses: Options.Driver, or the runtime's
// once Start has asked Options.Runtime.
func (m *Manager) Driver() Driver {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.driver
}

// spell is a cgroup's name as driver d spells it.
func spell(d Driver, n Name) string {
	if d == DriverSystemd {
		return n.Systemd()
	}
	return n.Cgroupfs()
}

func (m *Manager) started() (*fsDriver, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs == nil {
		return nil, ErrNotStarted
	}
	return m.fs, nil
}

// PodExists says whether the pod's cgroup exists.
func (m *Manager) PodExists(pod *v1.Pod) bool {
	fs, err := m.started()
	if err != nil {
		return false
	}
	n, err := m.PodName(pod)
	return err == nil && fs.exists(n)
}

// EnsurePod creates the pod's cgroup with PodConfig's limits, unless it
// exists: as upstream, an existing pod cgroup is left as it is. It records
// the cgroup as this Manager's before it makes it; one found that this
// Manager did not make (any of its directories) is left as it is too, not
// taken over, and logged once.
func (m *Manager) EnsurePod(pod *v1.Pod) error {
	fs, err := m.started()
	if err != nil {
		return err
	}
	n, err := m.PodName(pod)
	if err != nil {
		return err
	}
	if !m.owned.has(n) && !fs.gone(n) {
		m.notOurs(n)
		return nil
	}
	if fs.exists(n) {
		return nil
	}
	if err := m.owned.add(n); err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := m.create(n, PodConfig(pod, m.podOptions(pod))); err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// Destroy kills the processes left in a pod cgroup this Manager made and
// removes it. One it did not make is left alone: the error wraps
// ErrNotOwned (logged once). A cgroup that is not there is no error.
func (m *Manager) Destroy(n Name) error {
	fs, err := m.started()
	if err != nil {
		return err
	}
	if !m.owned.has(n) {
		if fs.gone(n) {
			return nil
		}
		m.notOurs(n)
		return fmt.Errorf("cgroups: destroy %s: %w", spell(m.Driver(), n), ErrNotOwned)
	}
	if err := m.destroy(n); err != nil {
		return err
	}
	return m.owned.remove(n)
}

// notOurs logs, once, a pod cgroup found that this Manager did not make.
func (m *Manager) notOurs(n Name) {
	if m.owned.firstSeen(n) {
		m.log.Info("Leaving a pod cgroup this agent did not make (not ours)", "cgroup", spell(m.Driver(), n))
	}
}

// ReduceCPU sets a cgroup's CPU shares to MinShares, as upstream does for
// an orphaned pod whose volumes are still being torn down.
func (m *Manager) ReduceCPU(n Name) error {
	if _, err := m.started(); err != nil {
		return err
	}
	s := uint64(MinShares)
	return m.set(n, ResourceConfig{CPUShares: &s})
}

// Pods lists the pod cgroups that exist under this Manager's hierarchy, by
// pod UID, whoever made them.
func (m *Manager) Pods() (map[types.UID]Name, error) {
	fs, err := m.started()
	if err != nil {
		return nil, err
	}
	out := map[types.UID]Name{}
	for _, class := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		parent := m.qosName(class)
		names, err := fs.children(parent)
		if err != nil {
			return nil, err
		}
		for _, dir := range names {
			c, ok := fs.component(dir)
			if !ok {
				continue
			}
			uid, ok := strings.CutPrefix(c, PodPrefix)
			if !ok || ValidComponent(uid) != nil {
				continue
			}
			n, _ := parent.Child(c)
			if fs.rel(n) != fs.rel(parent)+string(filepath.Separator)+dir {
				continue // not the name this driver gives that pod
			}
			out[types.UID(uid)] = n
		}
	}
	return out, nil
}

// PodCgroups lists the pod cgroups that exist under this Manager's
// hierarchy (Pods), by pod UID, each as its path under the cgroup mount
// as the driver spells it: what stats.CgroupReader reads.
func (m *Manager) PodCgroups() (map[types.UID]string, error) {
	pods, err := m.Pods()
	if err != nil {
		return nil, err
	}
	d := m.Driver()
	out := make(map[types.UID]string, len(pods))
	for uid, n := range pods {
		out[uid] = spell(d, n)
	}
	return out, nil
}

// UpdateQOS sets the burstable cgroup's CPU shares to the sum of the CPU
// requests of the Burstable pods among active and the besteffort cgroup's
// to MinShares, as upstream's QoS manager does whenever pods come and go
// (without its alpha QOSReserved and MemoryQoS features).
func (m *Manager) UpdateQOS(active []*v1.Pod) error {
	if _, err := m.started(); err != nil {
		return err
	}
	rcs := QOSConfigs(active)
	for _, class := range []v1.PodQOSClass{v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if err := m.set(m.qosName(class), rcs[class]); err != nil {
			return fmt.Errorf("cgroups: update %s cgroup: %w", strings.ToLower(string(class)), err)
		}
	}
	return nil
}

// QOSConfigs computes what UpdateQOS writes: the burstable cgroup's CPU
// shares from the CPU requests of the Burstable pods, the besteffort
// cgroup's MinShares. It is a pure function.
func QOSConfigs(active []*v1.Pod) map[v1.PodQOSClass]ResourceConfig {
	var milli int64
	for _, p := range active {
		if podspec.QOSClass(p) != v1.PodQOSBurstable {
			continue
		}
		if q, ok := podspec.Requests(p)[v1.ResourceCPU]; ok {
			milli += q.MilliValue()
		}
	}
	burstable, besteffort := MilliCPUToShares(milli), uint64(MinShares)
	return map[v1.PodQOSClass]ResourceConfig{
		v1.PodQOSBurstable:  {CPUShares: &burstable},
		v1.PodQOSBestEffort: {CPUShares: &besteffort},
	}
}

// CleanupOrphans removes the pod cgroups among pods (what Pods listed,
// before the caller read which pods exist) of the pods that cannot be
// running (running says which can), as upstream's housekeeping: the
// processes left in one are killed first. Only the cgroups this Manager
// made are removed (Options.StateDir): another's are left alone and
// logged once. A pod whose volumes still exist (volumesExist) keeps its
// cgroup, its CPU shares cut to the minimum, until a later pass. Errors
// are logged; the next pass tries again.
func (m *Manager) CleanupOrphans(pods map[types.UID]Name, running, volumesExist func(types.UID) bool) {
	found := make(map[string]struct{}, len(pods))
	for _, n := range pods {
		found[n.Cgroupfs()] = struct{}{}
	}
	m.owned.keepForeign(found)
	for uid, n := range pods {
		if running(uid) {
			continue
		}
		if !m.owned.has(n) {
			m.notOurs(n)
			continue
		}
		if volumesExist != nil && volumesExist(uid) {
			if err := m.ReduceCPU(n); err != nil {
				m.log.Info("Failed to reduce the CPU of an orphaned pod cgroup", "podUID", uid, "err", err)
			}
			continue
		}
		m.log.Info("Removing an orphaned pod cgroup", "podUID", uid, "cgroup", spell(m.Driver(), n))
		if err := m.Destroy(n); err != nil {
			m.log.Info("Failed to remove an orphaned pod cgroup", "podUID", uid, "err", err)
		}
	}
}

// ExclusiveCPUs tells whether a pod holds CPUs of its own (a CPU manager's
// static policy); cpumanager.Manager implements it.
type ExclusiveCPUs interface {
	PodHasExclusiveCPUs(pod *v1.Pod) bool
}

// podOptions are the Manager's pod options for one pod: without a CFS
// quota when the pod holds exclusive CPUs.
func (m *Manager) podOptions(pod *v1.Pod) PodOptions {
	o := m.opts.Pod
	if m.opts.ExclusiveCPUs != nil && m.opts.ExclusiveCPUs.PodHasExclusiveCPUs(pod) {
		o.DisableCPUQuota = true
	}
	return o
}
