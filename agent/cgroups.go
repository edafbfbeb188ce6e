package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/volume"
)

// The values of CgroupOptions.EnforceNodeAllocatable, upstream's.
const (
	EnforcePods                           = "pods"
	EnforceNone                           = "none"
	EnforceSystemReserved                 = "system-reserved"
	EnforceKubeReserved                   = "kube-reserved"
	EnforceSystemReservedCompressible     = "system-reserved-compressible"
	EnforceKubeReservedCompressible       = "kube-reserved-compressible"
	cgroupHousekeepingsPerQOSUpdate   int = 30 // every minute at the 2s period
)

// check validates the cgroup options as upstream's kubelet configuration
// is validated; its errors name the fields as Options spells them.
func (o CgroupOptions) check() error {
	if p := o.CPUCFSQuotaPeriod; p != 0 && (p < time.Millisecond || p > time.Second) {
		return fmt.Errorf("agent: Cgroups.CPUCFSQuotaPeriod %v must be between 1ms and 1s: %w", p, ErrInvalidOptions)
	}
	seen := map[string]bool{}
	for _, v := range o.EnforceNodeAllocatable {
		if seen[v] {
			return fmt.Errorf("agent: duplicated enforcement %q in Cgroups.EnforceNodeAllocatable: %w", v, ErrInvalidOptions)
		}
		seen[v] = true
		switch v {
		case EnforcePods:
		case EnforceNone:
			if len(o.EnforceNodeAllocatable) > 1 {
				return fmt.Errorf("agent: Cgroups.EnforceNodeAllocatable may not contain other enforcements with %q: %w", EnforceNone, ErrInvalidOptions)
			}
			continue
		case EnforceSystemReserved, EnforceKubeReserved, EnforceSystemReservedCompressible, EnforceKubeReservedCompressible:
			return fmt.Errorf("agent: Cgroups.EnforceNodeAllocatable %q needs the cgroup of the reserved daemons (upstream's systemReservedCgroup, kubeReservedCgroup), which the agent does not manage; only %q and %q are supported: %w",
				v, EnforcePods, EnforceNone, ErrInvalidOptions)
		default:
			return fmt.Errorf("agent: unknown Cgroups.EnforceNodeAllocatable %q (%q or %q): %w", v, EnforcePods, EnforceNone, ErrInvalidOptions)
		}
		if !o.PerQOS {
			return fmt.Errorf("agent: Cgroups.PerQOS must be set when Cgroups.EnforceNodeAllocatable contains %q: %w", v, ErrInvalidOptions)
		}
	}
	if !o.PerQOS {
		return nil
	}
	switch cgroups.Driver(o.Driver) {
	case "", cgroups.DriverCgroupfs, cgroups.DriverSystemd:
	default:
		return fmt.Errorf("agent: unknown Cgroups.Driver %q (%q or %q): %w", o.Driver, cgroups.DriverCgroupfs, cgroups.DriverSystemd, ErrInvalidOptions)
	}
	if o.FS == "" && os.Geteuid() != 0 {
		return fmt.Errorf("agent: Cgroups.PerQOS creates the pods' cgroups, which needs root: run as root, or turn Cgroups.PerQOS off: %w", ErrInvalidOptions)
	}
	return nil
}

// podCgroups is the pods' part of the cgroup hierarchy as the handler and
// the syncer use it: the QoS cgroups sized for the active pods, a pod's
// cgroup made before its sandbox and removed once it is terminated, and
// orphans collected at housekeeping. With a nil manager (Cgroups.PerQOS
// off) every method does nothing.
type podCgroups struct {
	mgr     *cgroups.Manager
	opts    CgroupOptions
	node    NodeOptions
	classes containerconfig.RuntimeClasses
	rootDir string
	view    *podView
	cache   *pleg.Cache
	// killer stops a pod that runs outside the hierarchy (ensure); set
	// once cri/podsync is built.
	killer *podsync.Syncer
	events EventRecorder
	log    *slog.Logger
}

// newCgroups builds the cgroup manager when Cgroups.PerQOS is set. It
// records the pod cgroups it makes under RootDir/cgroups, and removes no
// other: another agent's on the same host are not its orphans. It asks rt
// for its cgroup driver as it starts, Cgroups.Driver being the fallback
// (upstream's KubeletCgroupDriverFromCRI). The huge page sizes of capacity
// are those a pod's cgroup limits.
func newCgroups(opts Options, rt cgroups.RuntimeConfigGetter, capacity v1.ResourceList, cpus *cpumanager.Manager, log *slog.Logger) (*cgroups.Manager, error) {
	if !opts.Cgroups.PerQOS {
		return nil, nil
	}
	var hugePageSizes []int64 // the node's, each limited in a pod's cgroup
	for name := range capacity {
		if size, ok := podspec.HugePageSize(name); ok {
			hugePageSizes = append(hugePageSizes, size)
		}
	}
	slices.Sort(hugePageSizes)
	return cgroups.New(cgroups.Options{Root: opts.Cgroups.FS, Driver: cgroups.Driver(opts.Cgroups.Driver), Runtime: rt, Clock: opts.Clock,
		CgroupRoot: opts.Cgroups.Root, StateDir: filepath.Join(opts.RootDir, "cgroups"),
		Pod: cgroups.PodOptions{PidsLimit: opts.Cgroups.PodPidsLimit, CPUPeriod: uint64(opts.Cgroups.CPUCFSQuotaPeriod.Microseconds()),
			HugePageSizes: hugePageSizes},
		ExclusiveCPUs: exclusiveCPUs(cpus, opts.Resources.KeepCPUQuotaWithExclusiveCPUs),
		Logger:        log.With("component", "cgroups")})
}

// start creates the hierarchy, kubepods limited as upstream's: the node's
// capacity (with its task limit as "pid") less kube-reserved and
// system-reserved when Cgroups.EnforceNodeAllocatable has "pods", else the
// capacity itself. Hard eviction thresholds are not taken off: pods may use
// that memory until they are evicted.
func (c *podCgroups) start(ctx context.Context) error {
	if c.mgr == nil {
		return nil
	}
	capacity, err := c.node.Machine.Capacity(ctx)
	if err != nil {
		return fmt.Errorf("agent: cgroups: node capacity: %w", err)
	}
	capacity = capacity.DeepCopy()
	if pids, ok := nodePIDs(); ok {
		capacity[cgroups.ResourcePID] = *resource.NewQuantity(int64(pids), resource.DecimalSI)
	}
	limit := capacity
	if slices.Contains(c.opts.EnforceNodeAllocatable, EnforcePods) {
		limit = v1.ResourceList{}
		for name, q := range capacity {
			v := q.DeepCopy()
			for _, r := range []v1.ResourceList{c.node.SystemReserved, c.node.KubeReserved} {
				if rq, ok := r[name]; ok {
					v.Sub(rq)
				}
			}
			if v.Sign() < 0 {
				v.Set(0)
			}
			limit[name] = v
		}
	}
	if err := c.mgr.Start(ctx, cgroups.NodeConfig(limit)); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// ensure creates the pod's cgroup before its sandbox, as upstream's
// SyncPod: not for a pod whose termination was requested; a pod with
// running containers and no cgroup (the agent restarted with
// Cgroups.PerQOS newly on) is killed first so that it restarts inside the
// hierarchy, and a run-once pod (podspec.RunsOnce) killed so is not given
// one.
func (c *podCgroups) ensure(ctx context.Context, pod *v1.Pod, st *v1.PodStatus) error {
	if c.mgr == nil || c.view.workers.IsPodTerminationRequested(pod.UID) {
		return nil
	}
	cpod := podsync.WithOverhead(pod, c.classes)
	if c.mgr.PodExists(cpod) {
		return nil
	}
	killed := false
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running == nil {
			continue
		}
		rs, err := c.cache.Get(pod.UID)
		if err != nil {
			return err
		}
		if err := c.killer.KillPod(ctx, pod, rs, nil).Err(); err != nil {
			c.log.Error("Killing a pod without a cgroup failed", "pod", podDesc(pod), "err", err)
		} else {
			killed = true
		}
		break
	}
	if killed && podspec.RunsOnce(pod) {
		return nil
	}
	if err := c.mgr.UpdateQOS(c.qosPods()); err != nil {
		c.log.Debug("Failed to update the QoS cgroups", "pod", podDesc(pod), "err", err)
	}
	if err := c.mgr.EnsurePod(cpod); err != nil {
		c.events.Eventf(pod, v1.EventTypeWarning, "FailedToCreatePodContainer", "unable to ensure pod container exists: %v", err)
		return fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
	}
	return nil
}

// qosPods are the pods the QoS cgroups are sized for: the active pods,
// with their overhead.
func (c *podCgroups) qosPods() []*v1.Pod {
	pods := c.view.active()
	for i, p := range pods {
		pods[i] = podsync.WithOverhead(p, c.classes)
	}
	return pods
}

// updateQOS sizes the QoS cgroups for the active pods.
func (c *podCgroups) updateQOS() {
	if c.mgr == nil {
		return
	}
	if err := c.mgr.UpdateQOS(c.qosPods()); err != nil {
		c.log.Debug("Failed to update the QoS cgroups", "err", err)
	}
}

// destroy removes a terminated pod's cgroup, its containers gone; one this
// agent did not make is left (the manager says so once).
func (c *podCgroups) destroy(pod *v1.Pod) error {
	if c.mgr == nil {
		return nil
	}
	n, err := c.mgr.PodName(podsync.WithOverhead(pod, c.classes))
	if err != nil {
		return err
	}
	if err := c.mgr.Destroy(n); err != nil && !errors.Is(err, cgroups.ErrNotOwned) {
		return fmt.Errorf("pod %s: %w", podDesc(pod), err)
	}
	return nil
}

// list lists the pod cgroups, at the start of housekeeping (before the pods
// are read, so that a pod added meanwhile is never taken for an orphan);
// nil without Cgroups.PerQOS.
func (c *podCgroups) list() map[types.UID]cgroups.Name {
	if c.mgr == nil {
		return nil
	}
	pods, err := c.mgr.Pods()
	if err != nil {
		c.log.Warn("Cannot list the pod cgroups", "err", err)
		return nil
	}
	return pods
}

// cleanup removes the cgroups (of those listed before) of pods that cannot
// be running: neither syncing nor terminating.
func (c *podCgroups) cleanup(found map[types.UID]cgroups.Name, known map[types.UID]podworkers.WorkerSync) {
	if c.mgr == nil || len(found) == 0 {
		return
	}
	c.mgr.CleanupOrphans(found,
		func(uid types.UID) bool {
			s, ok := known[uid]
			return ok && (s.State == podworkers.StateSyncing || s.State == podworkers.StateTerminating)
		},
		func(uid types.UID) bool {
			vols, err := os.ReadDir(volume.PodVolumesDir(c.rootDir, uid))
			return err == nil && len(vols) > 0
		})
}

// ResizePod implements podsync.PodCgroupResizer: the pod's cgroup resized
// with its runtime class's overhead counted, as the cgroup was made
// (ensure).
func (c *podCgroups) ResizePod(pod *v1.Pod, grow bool) error {
	return c.mgr.ResizePod(podsync.WithOverhead(pod, c.classes), grow)
}

// PodResized implements podsync.PodCgroupChecker: whether the pod's
// cgroup has what its allocated resources, overhead counted, give it.
func (c *podCgroups) PodResized(pod *v1.Pod) (bool, error) {
	return c.mgr.PodResized(podsync.WithOverhead(pod, c.classes))
}

// podActuated says, for the allocation's PodActuation, whether the cgroup
// of a pod with pod-level resources has them: always without
// Cgroups.PerQOS (no pod cgroup to resize), and while it cannot be read
// (the next sync's resize reports why).
func (c *podCgroups) podActuated(pod *v1.Pod) bool {
	if c.mgr == nil || !podspec.HasPodLevelResources(pod) {
		return true
	}
	ok, err := c.PodResized(pod)
	return ok || err != nil
}

// resources is what the pod's cgroup runs with, for its status's
// pod-level resources (status.Input.PodCgroup); nil without
// Cgroups.PerQOS or when it cannot be read.
func (c *podCgroups) resources(pod *v1.Pod) *v1.ResourceRequirements {
	if c.mgr == nil {
		return nil
	}
	r, err := c.mgr.PodResources(podsync.WithOverhead(pod, c.classes))
	if err != nil {
		c.log.Debug("Cannot read the pod's cgroup", "pod", podDesc(pod), "err", err)
		return nil
	}
	return r
}

// exclusiveCPUs is the CPU manager as cgroups.ExclusiveCPUs; nil (no
// interface value) without one, or when pods holding exclusive CPUs keep
// their quota (Resources.KeepCPUQuotaWithExclusiveCPUs).
func exclusiveCPUs(cpus *cpumanager.Manager, keepQuota bool) cgroups.ExclusiveCPUs {
	if cpus == nil || keepQuota {
		return nil
	}
	return cpus
}
