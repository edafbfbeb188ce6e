package fake

import (
	"context"
	"fmt"
	"maps"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SetContainerStats sets the usage reported for a container until it is
// removed: ContainerStats and the lists return a copy, with Attributes
// filled in when nil and the zero timestamps of its CPU, memory and
// writable layer set to the clock's time. nil restores zero usage. A
// missing container is ErrNotFound.
func (r *Runtime) SetContainerStats(containerID string, stats *runtimeapi.ContainerStats) error {
	stats = proto.CloneOf(stats)
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return fmt.Errorf("set container stats: %w", err)
	}
	if stats == nil {
		delete(r.stats, c.id)
	} else {
		r.stats[c.id] = stats
	}
	return nil
}

// SetPodSandboxStats sets the usage reported for a sandbox until it is
// removed, as SetContainerStats does. The Linux.Containers of what is
// reported are always those of the sandbox's running containers (from
// SetContainerStats or zero). nil restores zero usage. A missing sandbox is
// ErrNotFound.
func (r *Runtime) SetPodSandboxStats(podSandboxID string, stats *runtimeapi.PodSandboxStats) error {
	stats = proto.CloneOf(stats)
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.sandboxes.resolve(podSandboxID, "pod sandbox")
	if err != nil {
		return fmt.Errorf("set pod sandbox stats: %w", err)
	}
	if stats == nil {
		delete(r.podStats, s.id)
	} else {
		r.podStats[s.id] = stats
	}
	return nil
}

func zeroUsage() *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{} }

func (r *Runtime) containerStatsLocked(c *container, now int64) *runtimeapi.ContainerStats {
	st := proto.CloneOf(r.stats[c.id])
	if st == nil {
		st = r.scriptedContainerStatsLocked(c, now) // nil: no UsageRule
	}
	if st == nil {
		st = &runtimeapi.ContainerStats{
			Cpu:    &runtimeapi.CpuUsage{UsageCoreNanoSeconds: zeroUsage(), UsageNanoCores: zeroUsage()},
			Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: zeroUsage(), UsageBytes: zeroUsage(), RssBytes: zeroUsage(), AvailableBytes: zeroUsage(), PageFaults: zeroUsage(), MajorPageFaults: zeroUsage()},
			WritableLayer: &runtimeapi.FilesystemUsage{
				FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.containersFsLocked()},
				UsedBytes:  zeroUsage(),
				InodesUsed: zeroUsage(),
			},
		}
	}
	if st.Attributes == nil {
		st.Attributes = &runtimeapi.ContainerAttributes{
			Id:          c.id,
			Metadata:    containerMetadata(c.config.GetMetadata()),
			Labels:      maps.Clone(c.config.GetLabels()),
			Annotations: maps.Clone(c.config.GetAnnotations()),
		}
	}
	if st.Cpu != nil && st.Cpu.Timestamp == 0 {
		st.Cpu.Timestamp = now
	}
	if st.Memory != nil && st.Memory.Timestamp == 0 {
		st.Memory.Timestamp = now
	}
	if st.WritableLayer != nil && st.WritableLayer.Timestamp == 0 {
		st.WritableLayer.Timestamp = now
	}
	return st
}

func (r *Runtime) sandboxStatsLocked(s *sandbox, now int64) *runtimeapi.PodSandboxStats {
	st := proto.CloneOf(r.podStats[s.id])
	if st == nil {
		st = r.scriptedSandboxStatsLocked(s, now) // nil: no UsageRule
	}
	if st == nil {
		st = &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu:     &runtimeapi.CpuUsage{UsageCoreNanoSeconds: zeroUsage(), UsageNanoCores: zeroUsage()},
			Memory:  &runtimeapi.MemoryUsage{WorkingSetBytes: zeroUsage(), UsageBytes: zeroUsage(), RssBytes: zeroUsage(), AvailableBytes: zeroUsage(), PageFaults: zeroUsage(), MajorPageFaults: zeroUsage()},
			Network: &runtimeapi.NetworkUsage{DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: zeroUsage(), RxErrors: zeroUsage(), TxBytes: zeroUsage(), TxErrors: zeroUsage()}},
			Process: &runtimeapi.ProcessUsage{ProcessCount: zeroUsage()},
		}}
	}
	if st.Attributes == nil {
		st.Attributes = &runtimeapi.PodSandboxAttributes{
			Id:          s.id,
			Metadata:    sandboxMetadata(s.config.GetMetadata()),
			Labels:      maps.Clone(s.config.GetLabels()),
			Annotations: maps.Clone(s.config.GetAnnotations()),
		}
	}
	if st.Linux == nil {
		st.Linux = &runtimeapi.LinuxPodSandboxStats{}
	}
	lin := st.Linux
	if lin.Cpu != nil && lin.Cpu.Timestamp == 0 {
		lin.Cpu.Timestamp = now
	}
	if lin.Memory != nil && lin.Memory.Timestamp == 0 {
		lin.Memory.Timestamp = now
	}
	if lin.Network != nil && lin.Network.Timestamp == 0 {
		lin.Network.Timestamp = now
	}
	if lin.Process != nil && lin.Process.Timestamp == 0 {
		lin.Process.Timestamp = now
	}
	lin.Containers = nil
	for _, c := range s.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			lin.Containers = append(lin.Containers, r.containerStatsLocked(c, now))
		}
	}
	return st
}

// ContainerStats implements cri.StatsProvider: what SetContainerStats set,
// or zero usage. A missing container is ErrNotFound.
func (r *Runtime) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	if err := r.enter(ctx, ContainerStats, &runtimeapi.ContainerStatsRequest{ContainerId: containerID}); err != nil {
		return nil, err
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return nil, err
	}
	return r.containerStatsLocked(c, now), nil
}

// ListContainerStats implements cri.StatsProvider for the running
// containers (those with a task, as containerd) that match the filter: ID,
// sandbox ID, labels, as ListContainers.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	if err := r.enter(ctx, ListContainerStats, &runtimeapi.ListContainerStatsRequest{Filter: filter}); err != nil {
		return nil, err
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []*runtimeapi.ContainerStats{}
	r.eachContainerLocked(filter.GetId(), filter.GetPodSandboxId(), filter.GetLabelSelector(), func(c *container) {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			out = append(out, r.containerStatsLocked(c, now))
		}
	})
	return out, nil
}

// PodSandboxStats implements cri.StatsProvider: what SetPodSandboxStats
// set, or zero usage, with the stats of the sandbox's running containers. A
// missing sandbox is ErrNotFound.
func (r *Runtime) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	if err := r.enter(ctx, PodSandboxStats, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: podSandboxID}); err != nil {
		return nil, err
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := r.sandboxes.resolve(podSandboxID, "pod sandbox")
	if err != nil {
		return nil, err
	}
	return r.sandboxStatsLocked(s, now), nil
}

// ListPodSandboxStats implements cri.StatsProvider for the ready sandboxes
// that match the filter (ID, labels, as ListPodSandbox).
func (r *Runtime) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	if err := r.enter(ctx, ListPodSandboxStats, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter}); err != nil {
		return nil, err
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []*runtimeapi.PodSandboxStats{}
	add := func(s *sandbox) {
		if s.state == runtimeapi.PodSandboxState_SANDBOX_READY && matchLabels(s.config.GetLabels(), filter.GetLabelSelector()) {
			out = append(out, r.sandboxStatsLocked(s, now))
		}
	}
	if id := filter.GetId(); id != "" {
		if s, err := r.sandboxes.resolve(id, "pod sandbox"); err == nil {
			add(s)
		}
		return out, nil
	}
	r.sandboxes.each(add)
	return out, nil
}
