package podsync

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// StepResizePodInPlace is the step that changes the resources of running
// containers (and of the pod's cgroup) without restarting them: upstream's
// ResizePodInPlace sync action.
const StepResizePodInPlace Step = "ResizePodInPlace"

// ErrResizePodInPlace is wrapped by the error of a failed in-place resize.
var ErrResizePodInPlace = errors.New("ResizePodInPlaceError")

// ResizeDone reports whether a running container runs as its spec asks:
// its resources match (ResourcesMatch) and, for a container restarted by
// resizes of memory, it was created with its spec's memory request.
func ResizeDone(pod *v1.Pod, c *v1.Container, st *runtimeapi.ContainerStatus) bool {
	return ResourcesMatch(pod, c, st) && !(running(st) && memoryRequestChanged(c, st))
}

// memoryRequestChanged says whether a container restarted by resizes of
// memory was created with another memory request than its spec's.
func memoryRequestChanged(c *v1.Container, st *runtimeapi.ContainerStatus) bool {
	if !podspec.RestartsOnResize(c, v1.ResourceMemory) {
		return false
	}
	v, ok := st.GetAnnotations()[containerconfig.MemoryRequestAnnotation]
	if !ok {
		return false
	}
	was, err := strconv.ParseInt(v, 10, 64)
	return err == nil && was != c.Resources.Requests.Memory().Value()
}

// Upstream's CPU units, as containerconfig.Resources translates them
// (shares per CPU, the fewest shares), read backwards here; and its
// smallest effective values: shares at or below minShares, and limits at
// or below minMilliCPULimit, all read as the same.
const (
	sharesPerCPU     = 1024
	minShares        = 2
	minMilliCPULimit = 10
)

// PodCgroupResizer changes the limits of a pod's own cgroup during an
// in-place resize (package cgroups' Manager has this method). With grow,
// only the values the pod's spec raises are written; without, only those it
// lowers: SyncPod grows the pod's cgroup before it resizes the containers
// and shrinks it after, as upstream orders them, so that a container's
// limit never exceeds its pod's.
type PodCgroupResizer interface {
	ResizePod(pod *v1.Pod, grow bool) error
}

// PodCgroupChecker is what a PodCgroupResizer may also answer, found by
// type assertion (package cgroups' Manager has this method): whether a
// pod's own cgroup has the limits its spec gives it. With it, SyncPod
// resizes the cgroup of a pod with pod-level resources (spec.resources)
// whose resize changes no running container (upstream's
// InPlacePodLevelResourcesVerticalScaling); without it, the pod's cgroup
// is resized only beside its containers.
type PodCgroupChecker interface {
	PodResized(pod *v1.Pod) (bool, error)
}

// podCgroupStale says whether pod has pod-level resources its cgroup does
// not have yet (PodCgroupChecker). A cgroup that cannot be read is taken
// as stale: the resize then reports why.
func (s *Syncer) podCgroupStale(pod *v1.Pod) bool {
	c, ok := s.opts.PodCgroups.(PodCgroupChecker)
	if !ok || !podspec.HasPodLevelResources(pod) || !IsResizeAllowed(pod) {
		return false
	}
	done, err := c.PodResized(pod)
	return err != nil || !done
}

// ContainerToUpdate is a running container whose CPU or memory changes in
// place (UpdateContainerResources) because its pod's allocated resources
// changed and its resize policy does not ask for a restart.
type ContainerToUpdate struct {
	// ID is the CRI container ID; Name the container's name in the spec.
	ID, Name string
	// Init says Index is in pod.Spec.InitContainers (a sidecar or a
	// regular init container), else in pod.Spec.Containers.
	Init  bool
	Index int
	// Current are the resources the runtime reports for the container;
	// Desired those of the spec (containerconfig.Resources: the default CFS
	// period; SyncPod applies them over the node's).
	Current, Desired *runtimeapi.LinuxContainerResources
}

// milliResources is what a resize compares, in upstream's units: CPU in
// millicores (the request read back from the shares, the limit from the
// quota), memory in bytes.
type milliResources struct {
	cpuRequest, cpuLimit, memoryLimit int64
}

func toMilli(r *runtimeapi.LinuxContainerResources) milliResources {
	var m milliResources
	if r.GetCpuShares() >= minShares {
		m.cpuRequest = (r.GetCpuShares()*1000 + sharesPerCPU - 1) / sharesPerCPU
	}
	if r.GetCpuQuota() > 0 && r.GetCpuPeriod() > 0 {
		m.cpuLimit = r.GetCpuQuota() * 1000 / r.GetCpuPeriod()
	}
	m.memoryLimit = r.GetMemoryLimitInBytes()
	return m
}

// IsResizeAllowed reports whether a pod's containers may be resized in
// place: not a static pod's, as upstream.
func IsResizeAllowed(pod *v1.Pod) bool { return !podspec.IsStatic(pod) }

// ResourcesMatch reports whether a container runs with the resources its
// spec asks, as the runtime reports them and in upstream's units; a
// container that is not running, or whose runtime reports no resources,
// matches (there is nothing to resize or to compare).
func ResourcesMatch(pod *v1.Pod, c *v1.Container, st *runtimeapi.ContainerStatus) bool {
	current := st.GetResources().GetLinux()
	if current == nil || !running(st) {
		return true
	}
	want, have := compared(containerconfig.Resources(pod, c), current)
	return want == have
}

// compared returns the desired and current resources in upstream's units,
// values at or below the smallest shares and quota made equal.
func compared(desired, current *runtimeapi.LinuxContainerResources) (want, have milliResources) {
	want, have = toMilli(desired), toMilli(current)
	if want.cpuRequest <= minShares && have.cpuRequest <= minShares {
		want.cpuRequest = have.cpuRequest
	}
	if want.cpuLimit <= minMilliCPULimit && have.cpuLimit <= minMilliCPULimit {
		want.cpuLimit = have.cpuLimit
	}
	return want, have
}

// resizeAction compares a running container's resources, as the runtime
// reports them, with its spec's, and plans the change: nothing (they
// match, or the runtime reports none, as upstream, which then has nothing
// to compare), an update in place, or a restart when the container's
// resizePolicy asks for one for a resource that changes. It reports
// whether the container is kept running.
func (a *Actions) resizeAction(pod *v1.Pod, c *v1.Container, st *runtimeapi.ContainerStatus, index int, init bool) bool {
	if !IsResizeAllowed(pod) || !running(st) || st.GetResources().GetLinux() == nil {
		return true
	}
	memRequest := memoryRequestChanged(c, st)
	if !memRequest && ResourcesMatch(pod, c, st) {
		return true
	}
	current, desired := st.GetResources().GetLinux(), containerconfig.Resources(pod, c)
	want, have := compared(desired, current)
	if ((want.memoryLimit != have.memoryLimit || memRequest) && podspec.RestartsOnResize(c, v1.ResourceMemory)) ||
		((want.cpuLimit != have.cpuLimit || want.cpuRequest != have.cpuRequest) && podspec.RestartsOnResize(c, v1.ResourceCPU)) {
		a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: st.GetId(), Name: c.Name, Reason: KillResizeRestart,
			Message: fmt.Sprintf("Container %s resize requires restart", c.Name)})
		if init {
			a.InitContainersToStart = append(a.InitContainersToStart, index)
		} else {
			a.ContainersToStart = append(a.ContainersToStart, index)
		}
		return false
	}
	a.ContainersToUpdate = append(a.ContainersToUpdate, ContainerToUpdate{ID: st.GetId(), Name: c.Name, Init: init, Index: index,
		Current: current, Desired: desired})
	return true
}

// restartsForResize says whether the plan restarts a container for its
// resize (KillResizeRestart): the pod's cgroup is then resized too, as
// upstream's UpdatePodResources.
func (a *Actions) restartsForResize() bool {
	for _, k := range a.ContainersToKill {
		if k.Reason == KillResizeRestart {
			return true
		}
	}
	return false
}

// desired is what the container of u is to run with, its CPU quota over
// the node's CFS period (containerconfig.Options.CPUCFSQuotaPeriod), which
// ComputeActions, a function of the pod alone, does not know: its
// Desired has the default period, and its milli-CPU the same.
func (s *Syncer) desired(pod *v1.Pod, u ContainerToUpdate) *runtimeapi.LinuxContainerResources {
	cs := pod.Spec.Containers
	if u.Init {
		cs = pod.Spec.InitContainers
	}
	if u.Index < 0 || u.Index >= len(cs) || cs[u.Index].Name != u.Name {
		return u.Desired
	}
	return s.config.Resources(pod, &cs[u.Index])
}

// resize performs the in-place part of a plan, in upstream's order: for
// memory, then for CPU, the pod's cgroup grows first, then the containers
// whose value falls are updated, then those whose value rises, then the
// pod's cgroup shrinks. Each update changes only the resource of its pass;
// the first failure ends the resize, which the next sync takes up again.
// A pod-level resize that changes no container is the pod's cgroup alone,
// grown then shrunk (updates empty). Once all is done, the runtime is told
// the pod's new resources (notifySandbox).
func (s *Syncer) resize(ctx context.Context, pod *v1.Pod, sandboxID string, updates []ContainerToUpdate) StepResult {
	step := StepResult{Step: StepResizePodInPlace, Target: pod.Name}
	fail := func(err error) StepResult {
		step.Err = fmt.Errorf("%w: pod %s: %w", ErrResizePodInPlace, podDesc(pod), err)
		step.Message = err.Error()
		s.log.Warn("In-place resize failed", "pod", podDesc(pod), "err", err)
		return step
	}
	if cg := s.opts.PodCgroups; cg != nil {
		if err := cg.ResizePod(pod, true); err != nil {
			return fail(err)
		}
	}
	current := make([]*runtimeapi.LinuxContainerResources, len(updates))
	desired := make([]*runtimeapi.LinuxContainerResources, len(updates))
	for i, u := range updates {
		current[i] = cloneLinuxResources(u.Current)
		desired[i] = s.desired(pod, u)
	}
	passes := []struct {
		name  string
		value func(*runtimeapi.LinuxContainerResources) int64
		apply func(dst, src *runtimeapi.LinuxContainerResources)
	}{
		{"memory", func(r *runtimeapi.LinuxContainerResources) int64 { return r.GetMemoryLimitInBytes() },
			func(dst, src *runtimeapi.LinuxContainerResources) {
				dst.MemoryLimitInBytes = src.GetMemoryLimitInBytes()
				if s.opts.Config.MemorySwapController {
					dst.MemorySwapLimitInBytes = dst.MemoryLimitInBytes
				}
			}},
		{"cpu", func(r *runtimeapi.LinuxContainerResources) int64 {
			m := toMilli(r)
			return m.cpuLimit*1_000_000 + m.cpuRequest
		}, func(dst, src *runtimeapi.LinuxContainerResources) {
			dst.CpuShares, dst.CpuQuota, dst.CpuPeriod = src.GetCpuShares(), src.GetCpuQuota(), src.GetCpuPeriod()
		}},
	}
	for _, p := range passes {
		for _, falling := range []bool{true, false} {
			for i, u := range updates {
				have, want := p.value(current[i]), p.value(desired[i])
				if have == want || (want < have) != falling {
					continue
				}
				if p.name == "memory" && falling && want > 0 {
					// As upstream's, a limit below what the container uses
					// now is not asked of the runtime, which would refuse
					// it or OOM-kill the container: the resize waits.
					if used, err := s.memoryUsage(ctx, u.ID); err == nil && used >= want {
						return fail(fmt.Errorf("container %s: attempting to set memory limit (%d) below current usage (%d)", u.Name, want, used))
					}
				}
				next := cloneLinuxResources(current[i])
				p.apply(next, desired[i])
				if err := s.rt.UpdateContainerResources(ctx, u.ID, &runtimeapi.ContainerResources{Linux: next}); err != nil {
					return fail(fmt.Errorf("container %s: update %s: %w", u.Name, p.name, err))
				}
				current[i] = next
			}
		}
	}
	if cg := s.opts.PodCgroups; cg != nil {
		if err := cg.ResizePod(pod, false); err != nil {
			return fail(err)
		}
	}
	s.log.Info("Resized containers in place", "pod", podDesc(pod), "containers", len(updates))
	s.notifySandbox(ctx, pod, sandboxID)
	return step
}

// PodSandboxResourcer is what a PodCgroupResizer may also answer, found by
// type assertion (package cgroups' Manager has it): the pod's overhead and
// its resources less the overhead, as the runtime is told them after a
// resize (cgroups.SandboxResources).
type PodSandboxResourcer interface {
	SandboxResources(pod *v1.Pod) (overhead, resources *runtimeapi.LinuxContainerResources)
}

// notifySandbox tells the runtime, when it takes the call
// (cri.SandboxResourcesUpdater), the pod's resources after a resize, as
// upstream's kubelet does at the end of every resize: a notification, whose
// failure is logged and changes nothing (a runtime that does not implement
// it, containerd before 2.1, only at debug level). Without pod cgroups
// (PodCgroups not a PodSandboxResourcer) there is no pod-level resource
// configuration to send.
func (s *Syncer) notifySandbox(ctx context.Context, pod *v1.Pod, sandboxID string) {
	u, ok := s.rt.(cri.SandboxResourcesUpdater)
	if !ok || sandboxID == "" {
		return
	}
	r, ok := s.opts.PodCgroups.(PodSandboxResourcer)
	if !ok {
		return
	}
	overhead, resources := r.SandboxResources(pod)
	err := u.UpdatePodSandboxResources(ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: sandboxID, Overhead: overhead, Resources: resources})
	switch {
	case err == nil:
	case errors.Is(err, cri.ErrUnimplemented):
		s.log.Debug("The runtime does not implement UpdatePodSandboxResources; the resize goes on", "pod", podDesc(pod))
	default:
		s.log.Error("Failed to notify the runtime of the pod's resources (UpdatePodSandboxResources)", "pod", podDesc(pod), "err", err)
	}
}

// memoryUsage is a container's memory usage as the runtime measures it
// (the cgroup's usage, which a limit is checked against).
func (s *Syncer) memoryUsage(ctx context.Context, id string) (int64, error) {
	st, err := s.rt.ContainerStats(ctx, id)
	if err != nil {
		return 0, err
	}
	u := st.GetMemory().GetUsageBytes()
	if u == nil {
		return 0, errors.New("no memory usage reported")
	}
	return int64(u.GetValue()), nil
}

func cloneLinuxResources(r *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	if r == nil {
		return &runtimeapi.LinuxContainerResources{}
	}
	return proto.CloneOf(r)
}
