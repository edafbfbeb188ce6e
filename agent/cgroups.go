package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
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

// newCgroups builds the cgroup manager when Cgroups.PerQOS is set. It
// records the pod cgroups it makes under RootDir/cgroups, and removes no
// other: another agent's on the same host are not its orphans.
func (a *Agent) newCgroups() error {
	if !a.opts.Cgroups.PerQOS {
		return nil
	}
	m, err := cgroups.New(cgroups.Options{Root: a.opts.Cgroups.FS, Driver: cgroups.Driver(a.opts.Cgroups.Driver),
		CgroupRoot: a.opts.Cgroups.Root, StateDir: filepath.Join(a.opts.RootDir, "cgroups"), Logger: a.log.With("component", "cgroups")})
	if err != nil {
		return err
	}
	a.cgroups = m
	return nil
}

// startCgroups creates the hierarchy, kubepods limited as upstream's:
// the node's capacity (with its task limit as "pid") less kube-reserved
// and system-reserved when Cgroups.EnforceNodeAllocatable has "pods", else the
// capacity itself. Hard eviction thresholds are not taken off: pods may
// use that memory until they are evicted.
func (a *Agent) startCgroups(ctx context.Context) error {
	if a.cgroups == nil {
		return nil
	}
	capacity, err := a.opts.Node.Machine.Capacity(ctx)
	if err != nil {
		return fmt.Errorf("agent: cgroups: node capacity: %w", err)
	}
	capacity = capacity.DeepCopy()
	if pids, ok := nodePIDs(); ok {
		capacity[cgroups.ResourcePID] = *resource.NewQuantity(int64(pids), resource.DecimalSI)
	}
	limit := capacity
	if slices.Contains(a.opts.Cgroups.EnforceNodeAllocatable, EnforcePods) {
		limit = v1.ResourceList{}
		for name, q := range capacity {
			v := q.DeepCopy()
			for _, r := range []v1.ResourceList{a.opts.Node.SystemReserved, a.opts.Node.KubeReserved} {
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
	if err := a.cgroups.Start(ctx, cgroups.NodeConfig(limit)); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// ensurePodCgroup creates the pod's cgroup before its sandbox, as
// upstream's SyncPod: not for a pod whose termination was requested; a pod
// with running containers and no cgroup (the agent restarted with
// Cgroups.PerQOS newly on) is killed first so that it restarts inside the
// hierarchy, and a run-once pod killed so is not given one.
func (a *Agent) ensurePodCgroup(ctx context.Context, pod *v1.Pod, st *v1.PodStatus) error {
	if a.cgroups == nil || a.workers.IsPodTerminationRequested(pod.UID) {
		return nil
	}
	cpod := podsync.WithOverhead(pod, a.opts.Cluster.RuntimeClasses)
	if a.cgroups.PodExists(cpod) {
		return nil
	}
	killed := false
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running == nil {
			continue
		}
		rs, err := a.cache.Get(pod.UID)
		if err != nil {
			return err
		}
		if err := a.syncer.KillPod(ctx, pod, rs, nil).Err(); err != nil {
			a.log.Error("Killing a pod without a cgroup failed", "pod", podDesc(pod), "err", err)
		} else {
			killed = true
		}
		break
	}
	if killed && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return nil
	}
	if err := a.cgroups.UpdateQOS(a.qosPods()); err != nil {
		a.log.Debug("Failed to update the QoS cgroups", "pod", podDesc(pod), "err", err)
	}
	if err := a.cgroups.EnsurePod(cpod); err != nil {
		a.events.Eventf(pod, v1.EventTypeWarning, "FailedToCreatePodContainer", "unable to ensure pod container exists: %v", err)
		return fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
	}
	return nil
}

// qosPods are the pods the QoS cgroups are sized for: the active pods,
// with their overhead.
func (a *Agent) qosPods() []*v1.Pod {
	pods := a.activePods()
	for i, p := range pods {
		pods[i] = podsync.WithOverhead(p, a.opts.Cluster.RuntimeClasses)
	}
	return pods
}

// updateQOSCgroups sizes the QoS cgroups for the active pods.
func (a *Agent) updateQOSCgroups() {
	if a.cgroups == nil {
		return
	}
	if err := a.cgroups.UpdateQOS(a.qosPods()); err != nil {
		a.log.Debug("Failed to update the QoS cgroups", "err", err)
	}
}

// destroyPodCgroup removes a terminated pod's cgroup, its containers gone;
// one this agent did not make is left (the manager says so once).
func (a *Agent) destroyPodCgroup(pod *v1.Pod) error {
	if a.cgroups == nil {
		return nil
	}
	n, err := a.cgroups.PodName(podsync.WithOverhead(pod, a.opts.Cluster.RuntimeClasses))
	if err != nil {
		return err
	}
	if err := a.cgroups.Destroy(n); err != nil && !errors.Is(err, cgroups.ErrNotOwned) {
		return fmt.Errorf("pod %s: %w", podDesc(pod), err)
	}
	return nil
}

// podCgroups lists the pod cgroups, at the start of housekeeping (before
// the pods are read, so that a pod added meanwhile is never taken for an
// orphan); nil without Cgroups.PerQOS.
func (a *Agent) podCgroups() map[types.UID]cgroups.Name {
	if a.cgroups == nil {
		return nil
	}
	pods, err := a.cgroups.Pods()
	if err != nil {
		a.log.Warn("Cannot list the pod cgroups", "err", err)
		return nil
	}
	return pods
}

// cleanupPodCgroups removes the cgroups (of those listed before) of pods
// that cannot be running: neither syncing nor terminating.
func (a *Agent) cleanupPodCgroups(found map[types.UID]cgroups.Name, known map[types.UID]podworkers.WorkerSync) {
	if a.cgroups == nil || len(found) == 0 {
		return
	}
	a.cgroups.CleanupOrphans(found,
		func(uid types.UID) bool {
			s, ok := known[uid]
			return ok && (s.State == podworkers.StateSyncing || s.State == podworkers.StateTerminating)
		},
		func(uid types.UID) bool {
			vols, err := os.ReadDir(volume.PodVolumesDir(a.opts.RootDir, uid))
			return err == nil && len(vols) > 0
		})
}
