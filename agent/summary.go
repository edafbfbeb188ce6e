package agent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cgroups"
	nodestats "github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/volume"
)

// newSummary builds the provider of the Summary API (/stats/summary): the
// runtime's pods and this machine, on the agent's clock, with the volumes
// the volume manager measures (persistent and CSI volumes). Where the
// machine cannot be measured (not Linux), Summary says so. Call it after
// newVolumes.
func (b *blocks) newSummary() {
	o := nodestats.Options{NodeName: b.opts.NodeName, Runtime: b.caps,
		RootDir: b.opts.RootDir, PodLogsDir: b.opts.logsDir(), Clock: b.clock, Logger: b.log.With("component", "stats")}
	if b.vol != nil {
		o.Volumes = b.vol
	}
	b.api.summary, b.api.summaryErr = nodestats.New(o)
}

// Summary implements server.StatsProvider: the node's and its pods' usage
// in the Summary API's types, what kubectl top and metrics-server read.
func (a *nodeAPI) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsv1alpha1.Summary, error) {
	if a.summary == nil {
		return nil, fmt.Errorf("stats summary: %w", a.summaryErr)
	}
	return a.summary.Summary(ctx, onlyCPUAndMemory)
}

// Usage implements the per-container usage examples/prometheus serves at
// /metrics/cadvisor: the runtime's CRI stats of the pods and their running
// containers (stats.Provider.Usage). Where the machine cannot be measured
// (not Linux), it says so.
func (a *Agent) Usage(ctx context.Context) (*nodestats.Usage, error) {
	if a.api.summary == nil {
		return nil, fmt.Errorf("usage: %w", a.api.summaryErr)
	}
	return a.api.summary.Usage(ctx)
}

// CgroupStats implements examples/prometheus' CgroupStatsProvider: what
// the cgroups of pods (those of a Usage) and their network namespaces tell
// beyond the CRI stats, read from the pod cgroups the agent's cgroup
// manager lists (stats.CgroupReader) under Cgroups.FS. Without
// Cgroups.PerQOS there are no pod cgroups: nothing.
func (a *Agent) CgroupStats(ctx context.Context, pods []nodestats.PodUsage) map[types.UID]*nodestats.PodCgroupStats {
	if a.cgroupStats == nil {
		return nil
	}
	return a.cgroupStats.CgroupStats(ctx, pods)
}

// Machine returns the machine the node's status reports (Options.Node's,
// with its pods capacity): what /metrics/cadvisor's machine series read.
func (a *Agent) Machine() node.Machine { return a.opts.Node.Machine }

var (
	_ nodestats.PodCgroupLister = (*cgroups.Manager)(nil)
	_ nodestats.VolumeMeasurer  = (*volume.Manager)(nil)
)
