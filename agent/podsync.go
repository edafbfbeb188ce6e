package agent

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/internal/hoststats"
	"github.com/kubeletkit/kubeletkit/prober"
)

// newPodSync builds cri/podsync's syncer over the runtime (a pull gives a
// starting pod's slot in the start gate back) and the records of pulled
// images, and the container config builder over the volumes, the
// environment's sources, the devices, the cgroups and the runtime's
// features; a pod's resource claims are prepared by a dra.Manager over the
// API server's claims (Cluster.ResourceClaims), its checkpoint in RootDir,
// deleting gone drivers' ResourceSlices (Cluster.ResourceSlices),
// which also gives the containers their claims' CDI devices (b.dra) and
// reports to the agent's DRAMetrics.
func (b *blocks) newPodSync(capacity v1.ResourceList) (*podsync.Syncer, error) {
	opts, log := b.opts, b.log
	claims, err := dra.New(dra.Options{Claims: opts.Cluster.ResourceClaims, Slices: opts.Cluster.ResourceSlices,
		StateDir: opts.RootDir, Dialer: opts.Node.DRADialer, Clock: b.clock, Logger: log.With("component", "dra"), Metrics: draMetrics(b.metrics)})
	if err != nil {
		return nil, err
	}
	b.dra = claims
	if dm, ok := b.metrics.(DRAMetrics); ok {
		dm.CountDRAClaims(claims.ClaimsInUse)
	}
	var sandboxCgroups containerconfig.SandboxCgroups
	var podCgroups podsync.PodCgroupResizer
	if b.cgroups.mgr != nil {
		sandboxCgroups, podCgroups = b.cgroups.mgr, b.cgroups
	}
	var devs containerconfig.ContainerDevices
	if b.devices != nil {
		devs = b.devices
	}
	var cpus containerconfig.ContainerCPUs
	if b.res.cpu != nil {
		cpus = b.res.cpu
		if opts.Resources.KeepCPUQuotaWithExclusiveCPUs {
			cpus = keepingQuota{b.res.cpu}
		}
	}
	var memoryNodes containerconfig.ContainerMemoryNodes
	if b.res.memory != nil {
		memoryNodes = b.res.memory
	}
	cms, secrets := b.envSources()
	pr := b.prober
	var records podsync.PullRecords
	if b.pullRecords != nil {
		records = b.pullRecords
	}
	return podsync.New(podsync.Options{
		Runtime: pullPausing{FullRuntime: b.caps, slots: cri.NewPullSlots(pullSlots(opts.Node.MaxParallelImagePulls))}, Recorder: b.events, Logger: log.With("component", "podsync"), Clock: b.clock,
		Config: containerconfig.Options{
			Volumes: b.vol, ConfigMaps: cms, Secrets: secrets, Services: opts.Cluster.Services, NodeAllocatable: b.allocatable,
			RecursiveReadOnlyMounts: b.features.handlerSupportsRecursiveReadOnly,
			Devices:                 devs,
			ClaimDevices:            claims,
			CPUs:                    cpus,
			MemoryNodes:             memoryNodes,
			UserNamespaces:          b.features.handlerSupportsUserNamespaces,
			SeccompDefault:          opts.Security.SeccompDefault, SeccompProfileRoot: filepath.Join(opts.RootDir, "seccomp"),
			Cgroups: sandboxCgroups, RuntimeClasses: opts.Cluster.RuntimeClasses,
			MemorySwapController: b.fakeRT == nil && cgroups.MemorySwapAccounted(), MemoryCapacity: capacity.Memory().Value(),
			SELinuxEnabled:    b.fakeRT == nil && hoststats.SELinuxEnabled(""),
			CPUCFSQuotaPeriod: opts.Cgroups.CPUCFSQuotaPeriod,
			LogRoot:           opts.logsDir(), PodsDir: opts.podsDir(), NodeName: opts.NodeName, HostIPs: opts.Node.HostIPs,
			ClusterDNS: opts.Node.ClusterDNS, ClusterDomain: opts.Node.ClusterDomain, ResolvConf: opts.Node.resolvConf(),
			HugePageSizes: containerconfig.HugePageSizes(capacity),
		},
		PodCgroups:       podCgroups,
		DynamicResources: claims,
		Probes: podsync.Probes{
			Liveness:         podsync.ProbeResultsFunc(func(id string) bool { r, ok := pr.Liveness().Get(id); return ok && r == prober.Failure }),
			Startup:          podsync.ProbeResultsFunc(func(id string) bool { r, ok := pr.Startup().Get(id); return ok && r == prober.Failure }),
			StartupSucceeded: func(id string) bool { r, ok := pr.Startup().Get(id); return ok && r == prober.Success },
		},
		ContainerLogLinksDir: opts.Logs.LinksDir,
		Credentials:          opts.Node.ImageCredentials,
		PullRecords:          records,
		Pulls:                podsync.PullObserverFunc(b.view.records.pulled),
		BackoffInitial:       opts.Timings.BackoffInitial, BackoffMax: opts.Timings.BackoffMax,
		MaxContainerRestartPeriod: opts.Node.MaxContainerRestartPeriod,
	})
}

// pullSlots is how many image pulls may run at once for
// NodeOptions.MaxParallelImagePulls: one for zero, none for a negative
// number (no bound).
func pullSlots(n int32) int {
	switch {
	case n == 0:
		return 1
	case n < 0:
		return 0
	}
	return int(n)
}
