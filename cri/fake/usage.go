package fake

import (
	"math"
	"math/bits"
	"slices"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Usage is the CPU and memory a running container uses, as a UsageRule
// scripts it.
type Usage struct {
	// NanoCores is the CPU the container keeps busy, in billionths of a
	// core (250_000_000 is a quarter of a core). Its stats report it as
	// usage_nano_cores, as containerd computes that figure, and a
	// cumulative usage_core_nano_seconds that grows at this rate on the
	// runtime's clock from the container's start.
	NanoCores uint64
	// MemoryBytes is the container's memory: its working set, usage and
	// RSS. Its available bytes are its memory limit minus this, when it
	// has a limit (zero otherwise, as containerd).
	MemoryBytes uint64
}

// UsageRule scripts the CPU and memory of the running containers it
// matches. Image, Name, Command and CommandPrefix match as in Rule; a
// UsageRule with no matcher matches every container.
type UsageRule struct {
	// Image matches the container's image as Rule.Image does.
	Image string
	// Name matches the container's metadata name.
	Name string
	// Command matches a container's argv equal to it.
	Command []string
	// CommandPrefix matches a container's argv that starts with it.
	CommandPrefix []string
	// Usage is what a matching container uses.
	Usage Usage
}

type usageRule struct {
	image imageMatcher
	name  string
	argv  argvMatcher
	usage Usage
}

func compileUsageRules(rules []UsageRule) []usageRule {
	out := make([]usageRule, 0, len(rules))
	for _, r := range rules {
		out = append(out, usageRule{
			image: newImageMatcher(r.Image),
			name:  r.Name,
			argv:  argvMatcher{exact: slices.Clone(r.Command), prefix: slices.Clone(r.CommandPrefix)},
			usage: r.Usage,
		})
	}
	return out
}

// SetUsageRules replaces the usage rules. Unlike Rules, they are matched
// whenever stats are read, so they apply at once to the running containers
// too; since a container's cumulative CPU is its rate times its running
// time, a new rate rewrites that history (a consumer sees the counter jump,
// or go back as after a restart).
func (r *Runtime) SetUsageRules(rules []UsageRule) {
	compiled := compileUsageRules(rules)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usageRules = compiled
}

// usageLocked returns the usage the first matching rule gives c.
func (r *Runtime) usageLocked(c *container) (Usage, bool) {
	if len(r.usageRules) == 0 {
		return Usage{}, false
	}
	argv := c.argv()
	for _, u := range r.usageRules {
		if (u.name == "" || u.name == c.config.GetMetadata().GetName()) &&
			u.image.match(c.imageNames, c.imageID) && u.argv.match(argv) {
			return u.usage, true
		}
	}
	return Usage{}, false
}

// scriptedContainerStatsLocked returns the stats a usage rule gives a
// running container, or nil when none matches it (or it is not running).
func (r *Runtime) scriptedContainerStatsLocked(c *container, now int64) *runtimeapi.ContainerStats {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil
	}
	u, ok := r.usageLocked(c)
	if !ok {
		return nil
	}
	v := func(n uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: n} }
	var avail uint64
	limit := c.config.GetLinux().GetResources().GetMemoryLimitInBytes()
	if c.resources != nil {
		limit = c.resources.GetLinux().GetMemoryLimitInBytes()
	}
	if limit > 0 && uint64(limit) > u.MemoryBytes {
		avail = uint64(limit) - u.MemoryBytes
	}
	return &runtimeapi.ContainerStats{
		Cpu: &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: v(cpuTime(u.NanoCores, now-c.startedAt)), UsageNanoCores: v(u.NanoCores)},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp: now, WorkingSetBytes: v(u.MemoryBytes), UsageBytes: v(u.MemoryBytes), RssBytes: v(u.MemoryBytes),
			AvailableBytes: v(avail), PageFaults: zeroUsage(), MajorPageFaults: zeroUsage(),
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp:  now,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.containersFsLocked()},
			UsedBytes:  zeroUsage(),
			InodesUsed: zeroUsage(),
		},
	}
}

// scriptedSandboxStatsLocked returns the stats of a sandbox one of whose
// running containers a usage rule scripts, or nil: its CPU and memory are
// the sums of its running containers' (as reported: set by
// SetContainerStats, scripted, or zero), its process count one per running
// container plus the sandbox's own (pause) process.
func (r *Runtime) scriptedSandboxStatsLocked(s *sandbox, now int64) *runtimeapi.PodSandboxStats {
	scripted := false
	var running []*runtimeapi.ContainerStats
	for _, c := range s.containers {
		if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if _, ok := r.usageLocked(c); ok {
			scripted = true
		}
		running = append(running, r.containerStatsLocked(c, now))
	}
	if !scripted {
		return nil
	}
	var cpu, nanoCores, ws, usage, rss uint64
	for _, st := range running {
		cpu += st.GetCpu().GetUsageCoreNanoSeconds().GetValue()
		nanoCores += st.GetCpu().GetUsageNanoCores().GetValue()
		ws += st.GetMemory().GetWorkingSetBytes().GetValue()
		usage += st.GetMemory().GetUsageBytes().GetValue()
		rss += st.GetMemory().GetRssBytes().GetValue()
	}
	v := func(n uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: n} }
	return &runtimeapi.PodSandboxStats{Linux: &runtimeapi.LinuxPodSandboxStats{
		Cpu: &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: v(cpu), UsageNanoCores: v(nanoCores)},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp: now, WorkingSetBytes: v(ws), UsageBytes: v(usage), RssBytes: v(rss),
			AvailableBytes: zeroUsage(), PageFaults: zeroUsage(), MajorPageFaults: zeroUsage(),
		},
		Network: &runtimeapi.NetworkUsage{Timestamp: now, DefaultInterface: &runtimeapi.NetworkInterfaceUsage{Name: "eth0", RxBytes: zeroUsage(), RxErrors: zeroUsage(), TxBytes: zeroUsage(), TxErrors: zeroUsage()}},
		Process: &runtimeapi.ProcessUsage{Timestamp: now, ProcessCount: v(uint64(len(running)) + 1)},
	}}
}

// cpuTime is nanoCores busy for elapsed nanoseconds, in nanoseconds of
// CPU, without overflowing on long runs.
func cpuTime(nanoCores uint64, elapsed int64) uint64 {
	if elapsed <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(nanoCores, uint64(elapsed))
	if hi >= uint64(time.Second) {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, uint64(time.Second))
	return q
}
