package stats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Usage is the pods' and their running containers' usage as the runtime
// measured it in its CRI stats, with the identities a per-container
// exposition labels its series with: what upstream kubelet's
// /metrics/cadvisor reports about workloads. Unlike the Summary, nothing
// is filled in or derived: a figure the runtime left out is nil, no CPU
// rate is computed, a pod measured from its containers alone has no
// pod-level figures, and no filesystem is walked.
type Usage struct {
	// Pods are the pods of the ready sandboxes, by namespace, name and
	// UID.
	Pods []PodUsage
}

// PodUsage is one ready sandbox's pod.
type PodUsage struct {
	// Ref names the pod (the sandbox's metadata).
	Ref statsv1alpha1.PodReference
	// SandboxID is the runtime's ID of the sandbox.
	SandboxID string
	// CPU, Memory, Network, Process and IO are the sandbox's own figures
	// from ListPodSandboxStats (the pod cgroup's and the pod network
	// namespace's); nil where the runtime gave none or lists no sandbox
	// stats. CPU has no UsageNanoCores unless the runtime gave it;
	// Network.Interfaces holds every interface once, the default one
	// (InterfaceStats) included.
	CPU     *statsv1alpha1.CPUStats
	Memory  *statsv1alpha1.MemoryStats
	Network *statsv1alpha1.NetworkStats
	Process *statsv1alpha1.ProcessStats
	IO      *statsv1alpha1.IOStats
	// Containers are its running containers, by name.
	Containers []ContainerUsage
}

// ContainerUsage is one running container's usage.
type ContainerUsage struct {
	// ID is the runtime's ID of the container; Name its name in the pod.
	ID, Name string
	// Image is the image the pod asked for (the CRI's
	// user_specified_image), or the runtime's reference when it has
	// none.
	Image string
	// CreatedAt is when the runtime created it.
	CreatedAt time.Time
	// CPU, Memory, Swap and IO (its pressure) are from the runtime's
	// stats; nil, as each of their figures, where it gave none.
	CPU    *statsv1alpha1.CPUStats
	Memory *statsv1alpha1.MemoryStats
	Swap   *statsv1alpha1.SwapStats
	IO     *statsv1alpha1.IOStats
	// WritableLayer is its writable layer's usage; nil where the runtime
	// gave none.
	WritableLayer *WritableLayer
}

// WritableLayer is a container's writable layer as the runtime measures
// it.
type WritableLayer struct {
	// Time is when it was measured.
	Time time.Time
	// Mountpoint names the filesystem holding it (the CRI's fs_id).
	Mountpoint string
	// UsedBytes and InodesUsed are what it occupies; nil where the
	// runtime did not say.
	UsedBytes, InodesUsed *uint64
}

// Usage measures the pods of the ready sandboxes and their running
// containers from the runtime's CRI stats: ListPodSandboxStats, or, when
// the runtime cannot list sandbox stats, ListContainerStats (then the
// pods have no figures of their own). A runtime that answers
// Unimplemented to both gives pods without usage. It fails when the
// runtime's sandboxes, containers or (in the fallback) container stats
// cannot be listed. It keeps nothing between calls.
func (p *Provider) Usage(ctx context.Context) (*Usage, error) {
	sandboxes, containers, err := p.runtimeObjects(ctx)
	if err != nil {
		return nil, fmt.Errorf("measure usage: %w", err)
	}
	byID := map[string]*PodUsage{}
	pod := func(sb *runtimeapi.PodSandbox) *PodUsage {
		if u, ok := byID[sb.GetId()]; ok {
			return u
		}
		md := sb.GetMetadata()
		u := &PodUsage{Ref: statsv1alpha1.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()}, SandboxID: sb.GetId()}
		byID[sb.GetId()] = u
		return u
	}
	for _, sb := range sandboxes {
		pod(sb)
	}
	addContainer := func(st *runtimeapi.ContainerStats, sandboxID string) {
		ctr, ok := containers[st.GetAttributes().GetId()]
		if !ok || (sandboxID != "" && ctr.GetPodSandboxId() != sandboxID) {
			return
		}
		sb, ok := sandboxes[ctr.GetPodSandboxId()]
		if !ok {
			return
		}
		u := pod(sb)
		u.Containers = append(u.Containers, containerUsage(st, ctr))
	}
	sbStats, err := p.o.Runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	switch {
	case err == nil:
		for _, st := range sbStats {
			sb, ok := sandboxes[st.GetAttributes().GetId()]
			if !ok {
				continue
			}
			sandboxUsage(pod(sb), st.GetLinux())
			for _, c := range st.GetLinux().GetContainers() {
				addContainer(c, sb.GetId())
			}
		}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("measure usage: %w", err)
	default:
		p.log.Debug("Pod sandbox stats unavailable; containers measured alone", "err", err)
		cStats, err := p.o.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
		switch {
		case errors.Is(err, cri.ErrUnimplemented):
			p.log.Debug("The runtime does not list container stats", "err", err)
		case err != nil:
			return nil, fmt.Errorf("measure usage: %w", err)
		}
		for _, st := range cStats {
			addContainer(st, "")
		}
	}
	out := &Usage{Pods: make([]PodUsage, 0, len(byID))}
	for _, u := range byID {
		slices.SortFunc(u.Containers, func(a, b ContainerUsage) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
		out.Pods = append(out.Pods, *u)
	}
	slices.SortFunc(out.Pods, func(a, b PodUsage) int {
		return cmp.Or(cmp.Compare(a.Ref.Namespace, b.Ref.Namespace), cmp.Compare(a.Ref.Name, b.Ref.Name), cmp.Compare(a.Ref.UID, b.Ref.UID))
	})
	return out, nil
}

// sandboxUsage copies a sandbox's own figures, as the runtime gave them.
func sandboxUsage(u *PodUsage, lin *runtimeapi.LinuxPodSandboxStats) {
	if c := lin.GetCpu(); c != nil {
		u.CPU = cpuOf(c)
	}
	if m := lin.GetMemory(); m != nil {
		u.Memory = memoryOf(m, false)
	}
	if n := lin.GetNetwork(); n != nil {
		u.Network = &statsv1alpha1.NetworkStats{Time: timeOf(n.GetTimestamp())}
		seen := map[string]bool{}
		for _, i := range slices.Concat(n.GetInterfaces(), []*runtimeapi.NetworkInterfaceUsage{n.GetDefaultInterface()}) {
			if i == nil || seen[i.GetName()] {
				continue
			}
			seen[i.GetName()] = true
			u.Network.Interfaces = append(u.Network.Interfaces, interfaceOf(i))
		}
		if d := n.GetDefaultInterface(); d != nil {
			u.Network.InterfaceStats = interfaceOf(d)
		}
	}
	if pr := lin.GetProcess(); pr != nil {
		u.Process = &statsv1alpha1.ProcessStats{ProcessCount: valueOf(pr.GetProcessCount())}
	}
	if io := lin.GetIo(); io != nil {
		u.IO = &statsv1alpha1.IOStats{Time: timeOf(io.GetTimestamp()), PSI: psiOf(io.GetPsi())}
	}
}

// containerUsage copies a container's figures, as the runtime gave them.
func containerUsage(st *runtimeapi.ContainerStats, ctr *runtimeapi.Container) ContainerUsage {
	name := st.GetAttributes().GetMetadata().GetName()
	if name == "" {
		name = ctr.GetMetadata().GetName()
	}
	image := ctr.GetImage().GetUserSpecifiedImage()
	if image == "" {
		image = ctr.GetImage().GetImage()
	}
	cu := ContainerUsage{ID: ctr.GetId(), Name: name, Image: image, CreatedAt: time.Unix(0, ctr.GetCreatedAt())}
	if c := st.GetCpu(); c != nil {
		cu.CPU = cpuOf(c)
	}
	if m := st.GetMemory(); m != nil {
		cu.Memory = memoryOf(m, false)
	}
	if s := st.GetSwap(); s != nil {
		cu.Swap = &statsv1alpha1.SwapStats{Time: timeOf(s.GetTimestamp()), SwapUsageBytes: valueOf(s.GetSwapUsageBytes()), SwapAvailableBytes: valueOf(s.GetSwapAvailableBytes())}
	}
	if io := st.GetIo(); io != nil {
		cu.IO = &statsv1alpha1.IOStats{Time: timeOf(io.GetTimestamp()), PSI: psiOf(io.GetPsi())}
	}
	if w := st.GetWritableLayer(); w != nil {
		cu.WritableLayer = &WritableLayer{Time: time.Unix(0, w.GetTimestamp()), Mountpoint: w.GetFsId().GetMountpoint(),
			UsedBytes: valueOf(w.GetUsedBytes()), InodesUsed: valueOf(w.GetInodesUsed())}
	}
	return cu
}

// cpuOf converts CRI CPU usage; what the runtime left out is nil.
func cpuOf(c *runtimeapi.CpuUsage) *statsv1alpha1.CPUStats {
	return &statsv1alpha1.CPUStats{
		Time:                 timeOf(c.GetTimestamp()),
		UsageNanoCores:       valueOf(c.GetUsageNanoCores()),
		UsageCoreNanoSeconds: valueOf(c.GetUsageCoreNanoSeconds()),
		PSI:                  psiOf(c.GetPsi()),
	}
}
