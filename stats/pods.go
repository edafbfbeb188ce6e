package stats

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// pods lists the stats of the pods whose sandbox is ready, with their
// running containers, from ListPodSandboxStats; when the runtime cannot
// list sandbox stats, from ListContainerStats (upstream's fallback, which
// knows no pod network or process count and sums the containers' CPU and
// memory for the pod's). d is nil for the CPU-and-memory summary.
func (p *Provider) pods(ctx context.Context, d *disk) ([]statsv1alpha1.PodStats, error) {
	sandboxes, containers, err := p.runtimeObjects(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []statsv1alpha1.PodStats
	sbStats, err := p.o.Runtime.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	switch {
	case err == nil:
		out = p.podsFromSandboxStats(ctx, d, sbStats, sandboxes, containers, seen)
	case ctx.Err() != nil:
		return nil, err
	default:
		if errors.Is(err, cri.ErrUnimplemented) {
			p.log.Debug("The runtime does not list pod sandbox stats; pods measured from their containers", "err", err)
		} else {
			p.log.Info("Failed to list pod sandbox stats; pods measured from their containers", "err", err)
		}
		cStats, err := p.o.Runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
		switch {
		case errors.Is(err, cri.ErrUnimplemented):
			// A runtime that measures nothing: the summary has the
			// node's usage and no pod's.
			p.log.Debug("The runtime does not list container stats; the summary has no pods", "err", err)
		case err != nil:
			return nil, err
		}
		out = p.podsFromContainerStats(ctx, d, cStats, sandboxes, containers, seen)
	}
	p.cpu.retain(seen)
	slices.SortFunc(out, func(a, b statsv1alpha1.PodStats) int {
		return cmp.Or(cmp.Compare(a.PodRef.Namespace, b.PodRef.Namespace), cmp.Compare(a.PodRef.Name, b.PodRef.Name), cmp.Compare(a.PodRef.UID, b.PodRef.UID))
	})
	if d != nil {
		live := make(map[string]bool, len(out))
		for i := range out {
			d.pod(ctx, &out[i])
			live[out[i].PodRef.UID] = true
		}
		p.forgetVolumes(live)
	}
	return out, nil
}

// runtimeObjects returns the ready sandboxes and the running containers by
// ID: a stopped sandbox or an exited container is not measured, as upstream
// drops terminated pods and containers from its usage.
func (p *Provider) runtimeObjects(ctx context.Context) (map[string]*runtimeapi.PodSandbox, map[string]*runtimeapi.Container, error) {
	sbs, err := p.o.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return nil, nil, err
	}
	cs, err := p.o.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, nil, err
	}
	sandboxes := make(map[string]*runtimeapi.PodSandbox, len(sbs))
	for _, s := range sbs {
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY && s.GetMetadata() != nil {
			sandboxes[s.GetId()] = s
		}
	}
	containers := make(map[string]*runtimeapi.Container, len(cs))
	for _, c := range cs {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			containers[c.GetId()] = c
		}
	}
	return sandboxes, containers, nil
}

func (p *Provider) podsFromSandboxStats(ctx context.Context, d *disk, list []*runtimeapi.PodSandboxStats, sandboxes map[string]*runtimeapi.PodSandbox,
	containers map[string]*runtimeapi.Container, seen map[string]bool) []statsv1alpha1.PodStats {
	out := make([]statsv1alpha1.PodStats, 0, len(list))
	for _, st := range list {
		sb, ok := sandboxes[st.GetAttributes().GetId()]
		if !ok {
			continue
		}
		ps := newPodStats(sb)
		lin := st.GetLinux()
		for _, c := range lin.GetContainers() {
			ctr, ok := containers[c.GetAttributes().GetId()]
			if !ok || ctr.GetPodSandboxId() != sb.GetId() {
				continue
			}
			ps.Containers = append(ps.Containers, p.containerStats(ctx, d, c, ctr, sb, seen))
		}
		if c := lin.GetCpu(); c != nil {
			ps.CPU = cpuOf(c)
			key := sandboxKey + sb.GetId()
			seen[key] = true
			p.cpu.fill(key, ps.CPU)
		}
		if m := lin.GetMemory(); m != nil {
			ps.Memory = memoryOf(m, false)
		}
		if d != nil {
			// The CPU-and-memory summary has no network, process or I/O
			// figures, as upstream's.
			if n := lin.GetNetwork(); n != nil {
				ps.Network = &statsv1alpha1.NetworkStats{
					Time:           timeOf(n.GetTimestamp()),
					InterfaceStats: interfaceOf(n.GetDefaultInterface()),
					Interfaces:     make([]statsv1alpha1.InterfaceStats, 0, len(n.GetInterfaces())),
				}
				for _, i := range n.GetInterfaces() {
					ps.Network.Interfaces = append(ps.Network.Interfaces, interfaceOf(i))
				}
			}
			if pr := lin.GetProcess(); pr != nil {
				ps.ProcessStats = &statsv1alpha1.ProcessStats{ProcessCount: valueOf(pr.GetProcessCount())}
			}
			if io := lin.GetIo(); io != nil {
				ps.IO = &statsv1alpha1.IOStats{Time: timeOf(io.GetTimestamp()), PSI: psiOf(io.GetPsi())}
			}
		}
		ps.Swap = sumSwap(ps.Containers)
		sortContainers(ps.Containers)
		out = append(out, *ps)
	}
	return out
}

func (p *Provider) podsFromContainerStats(ctx context.Context, d *disk, list []*runtimeapi.ContainerStats, sandboxes map[string]*runtimeapi.PodSandbox,
	containers map[string]*runtimeapi.Container, seen map[string]bool) []statsv1alpha1.PodStats {
	bySandbox := map[string]*statsv1alpha1.PodStats{}
	var order []string
	for _, st := range list {
		ctr, ok := containers[st.GetAttributes().GetId()]
		if !ok {
			continue
		}
		sb, ok := sandboxes[ctr.GetPodSandboxId()]
		if !ok {
			continue
		}
		ps, ok := bySandbox[sb.GetId()]
		if !ok {
			ps = newPodStats(sb)
			bySandbox[sb.GetId()] = ps
			order = append(order, sb.GetId())
		}
		cs := p.containerStats(ctx, d, st, ctr, sb, seen)
		addPodCPUAndMemory(ps, &cs)
		ps.Containers = append(ps.Containers, cs)
	}
	out := make([]statsv1alpha1.PodStats, 0, len(order))
	for _, id := range order {
		ps := bySandbox[id]
		ps.Swap = sumSwap(ps.Containers)
		sortContainers(ps.Containers)
		out = append(out, *ps)
	}
	return out
}

// newPodStats identifies the pod of a sandbox; its start time is the
// sandbox's creation, as upstream's.
func newPodStats(sb *runtimeapi.PodSandbox) *statsv1alpha1.PodStats {
	md := sb.GetMetadata()
	return &statsv1alpha1.PodStats{
		PodRef:     statsv1alpha1.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()},
		StartTime:  metav1.NewTime(time.Unix(0, sb.GetCreatedAt())),
		Containers: []statsv1alpha1.ContainerStats{},
	}
}

// containerStats converts a container's CRI stats. As upstream's, CPU,
// memory and swap are always there, with what the runtime did not report
// as zero, except UsageNanoCores: the runtime's, or computed from the
// cumulative usage, or nil until it can be. Its start time is the
// container's creation. With d (a full summary) it has its writable layer
// (Rootfs) and its logs.
func (p *Provider) containerStats(ctx context.Context, d *disk, st *runtimeapi.ContainerStats, ctr *runtimeapi.Container, sb *runtimeapi.PodSandbox, seen map[string]bool) statsv1alpha1.ContainerStats {
	name := st.GetAttributes().GetMetadata().GetName()
	if name == "" {
		name = ctr.GetMetadata().GetName()
	}
	now := metav1.NewTime(p.o.Clock.Now())
	cs := statsv1alpha1.ContainerStats{Name: name, StartTime: metav1.NewTime(time.Unix(0, ctr.GetCreatedAt()))}
	if c := st.GetCpu(); c != nil {
		cs.CPU = &statsv1alpha1.CPUStats{
			Time:                 timeOf(c.GetTimestamp()),
			UsageNanoCores:       valueOf(c.GetUsageNanoCores()),
			UsageCoreNanoSeconds: zeroIfNil(c.GetUsageCoreNanoSeconds()),
			PSI:                  psiOf(c.GetPsi()),
		}
		key := containerKey + ctr.GetId()
		seen[key] = true
		p.cpu.fill(key, cs.CPU)
	} else {
		cs.CPU = &statsv1alpha1.CPUStats{Time: now, UsageNanoCores: new(uint64), UsageCoreNanoSeconds: new(uint64)}
	}
	if m := st.GetMemory(); m != nil {
		cs.Memory = memoryOf(m, true)
	} else {
		z := func() *uint64 { return new(uint64) }
		cs.Memory = &statsv1alpha1.MemoryStats{Time: now, AvailableBytes: z(), UsageBytes: z(), WorkingSetBytes: z(), RSSBytes: z(), PageFaults: z(), MajorPageFaults: z()}
	}
	if s := st.GetSwap(); s != nil {
		cs.Swap = &statsv1alpha1.SwapStats{Time: timeOf(s.GetTimestamp()), SwapUsageBytes: zeroIfNil(s.GetSwapUsageBytes()), SwapAvailableBytes: zeroIfNil(s.GetSwapAvailableBytes())}
	} else {
		cs.Swap = &statsv1alpha1.SwapStats{Time: now, SwapUsageBytes: new(uint64), SwapAvailableBytes: new(uint64)}
	}
	if d != nil {
		// The CPU-and-memory summary has no I/O figures, as upstream's.
		if io := st.GetIo(); io != nil {
			cs.IO = &statsv1alpha1.IOStats{Time: timeOf(io.GetTimestamp()), PSI: psiOf(io.GetPsi())}
		}
		cs.Rootfs = d.rootfs(ctx, st.GetWritableLayer())
		cs.Logs = d.containerLogs(ctx, sb.GetMetadata(), ctr.GetMetadata().GetName())
	}
	return cs
}
