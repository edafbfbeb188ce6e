package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/memorymanager"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// resourceManagers are the CPU, topology and memory managers: all nil when
// every policy is "none" ("None") and no option is set, as a node without
// them behaves the same; the memory manager only with MemoryManagerPolicy
// or ReservedMemory.
type resourceManagers struct {
	numa     []int // the machine's NUMA nodes
	cpu      *cpumanager.Manager
	topology *topologymanager.Manager
	memory   *memorymanager.Manager // nil unless MemoryManagerPolicy is Static
}

// newResourceManagers builds the managers of Options.Resources.
func newResourceManagers(opts Options, log *slog.Logger) (resourceManagers, error) {
	r := opts.Resources
	memPolicy := r.MemoryManagerPolicy
	if memPolicy == "" {
		memPolicy = memorymanager.PolicyNone
	}
	if orNone(r.CPUManagerPolicy) == cpumanager.PolicyNone && orNone(r.TopologyManagerPolicy) == topologymanager.PolicyNone &&
		memPolicy == memorymanager.PolicyNone && len(r.ReservedMemory) == 0 &&
		len(r.CPUManagerPolicyOptions) == 0 && len(r.TopologyManagerPolicyOptions) == 0 && r.ReservedSystemCPUs.IsEmpty() {
		return resourceManagers{}, nil
	}
	topo, distances := r.Topology, r.NUMADistances
	if topo == nil {
		var err error
		if topo, err = cpumanager.Discover("/sys"); err != nil {
			return resourceManagers{}, fmt.Errorf("Resources: the machine's CPU topology: %w", err)
		}
		if distances == nil && r.TopologyManagerPolicyOptions[topologymanager.OptionPreferClosestNUMANodes] != "" {
			if distances, err = topologymanager.ReadDistances("/sys", topo.NUMANodes()); err != nil {
				return resourceManagers{}, fmt.Errorf("Resources: %w", err)
			}
		}
	}
	tm, err := topologymanager.New(topologymanager.Options{Policy: r.TopologyManagerPolicy, Scope: r.TopologyManagerScope,
		PolicyOptions: r.TopologyManagerPolicyOptions, NUMANodes: topo.NUMANodes(), Distances: distances,
		Logger: log.With("component", "topologymanager")})
	if err != nil {
		return resourceManagers{}, fmt.Errorf("Resources.TopologyManagerPolicy: %w: %w", err, ErrInvalidOptions)
	}
	reserved := opts.Node.KubeReserved.Cpu().MilliValue() + opts.Node.SystemReserved.Cpu().MilliValue()
	var cpuMetrics cpumanager.Metrics
	var memMetrics memorymanager.Metrics
	if rm, ok := opts.Metrics.(ResourceMetrics); ok {
		cpuMetrics, memMetrics = rm, rm
	}
	cpu, err := cpumanager.New(cpumanager.Options{Policy: r.CPUManagerPolicy, PolicyOptions: r.CPUManagerPolicyOptions, Topology: topo,
		Reserved: r.ReservedSystemCPUs, ReservedMilliCPU: reserved, StateDir: opts.RootDir, Affinity: tm, Metrics: cpuMetrics,
		Logger: log.With("component", "cpumanager")})
	if errors.Is(err, cpumanager.ErrInvalidOptions) {
		return resourceManagers{}, fmt.Errorf("Resources.CPUManagerPolicy: %w: %w", err, ErrInvalidOptions)
	}
	if err != nil {
		return resourceManagers{}, fmt.Errorf("Resources: %w", err)
	}
	res := resourceManagers{numa: topo.NUMANodes(), cpu: cpu, topology: tm}
	if memPolicy == memorymanager.PolicyNone && len(r.ReservedMemory) == 0 {
		return res, nil
	}
	machine := r.MemoryMachine
	if machine == nil {
		if machine, err = memorymanager.Discover("/sys"); err != nil {
			return resourceManagers{}, fmt.Errorf("Resources: the machine's NUMA memory: %w", err)
		}
	}
	res.memory, err = memorymanager.New(memorymanager.Options{Policy: memPolicy, Machine: machine, ReservedMemory: r.ReservedMemory,
		KubeReserved: opts.Node.KubeReserved, SystemReserved: opts.Node.SystemReserved, EvictionHardMemory: hardEvictionMemory(opts, machine),
		StateDir: opts.RootDir, Affinity: tm, Metrics: memMetrics, Logger: log.With("component", "memorymanager")})
	if errors.Is(err, memorymanager.ErrInvalidOptions) {
		return resourceManagers{}, fmt.Errorf("Resources.MemoryManagerPolicy: %w: %w", err, ErrInvalidOptions)
	}
	if err != nil {
		return resourceManagers{}, fmt.Errorf("Resources: %w", err)
	}
	return res, nil
}

// addHintProviders gives the topology manager its hint providers in
// upstream's order: the devices (nil without a device plugin directory),
// the CPU manager, the memory manager. Providers allocate in that order.
func (r resourceManagers) addHintProviders(devs *devices.Manager) {
	if r.topology == nil {
		return
	}
	if devs != nil {
		r.topology.AddHintProvider(devs)
	}
	r.topology.AddHintProvider(r.cpu)
	if r.memory != nil {
		r.topology.AddHintProvider(r.memory)
	}
}

// hardEvictionMemory is the hard memory.available eviction threshold in
// bytes, which the memory manager's reservations must cover: none when
// eviction is off.
func hardEvictionMemory(opts Options, machine *memorymanager.Machine) resource.Quantity {
	if opts.Eviction.Disabled {
		return resource.Quantity{}
	}
	thresholds := opts.Eviction.Thresholds
	if thresholds == nil {
		thresholds = eviction.DefaultHardThresholds()
	}
	var total int64
	for _, n := range machine.Nodes() {
		total += int64(n.Memory)
	}
	return *resource.NewQuantity(eviction.HardMemoryAvailable(thresholds, total), resource.BinarySI)
}

// reconciler is the periodic pass over the managers that have one: nil
// without the static CPU policy or a memory manager.
func (r resourceManagers) reconciler(b *blocks, period time.Duration) *resourceReconciler {
	cpu := r.cpu
	if cpu != nil && cpu.Policy() != cpumanager.PolicyStatic {
		cpu = nil
	}
	if cpu == nil && r.memory == nil {
		return nil
	}
	return &resourceReconciler{cpu: cpu, mem: r.memory, view: b.view, cache: b.cache, rt: b.caps, clock: b.clock,
		period: period, log: b.log.With("component", "resource-managers")}
}

// admission is the topology manager as an admission handler, each admission
// timed and counted when the agent's Metrics are ResourceMetrics.
func (r resourceManagers) admission(clk clock.PassiveClock, metrics Metrics) admission.Handler {
	rm, ok := metrics.(ResourceMetrics)
	if !ok {
		return r.topology
	}
	return admission.HandlerFunc(func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
		start := clk.Now()
		ok, reason, message := r.topology.Admit(pod, others)
		rm.TopologyAdmission(clk.Since(start), !ok)
		return ok, reason, message
	})
}

func orNone(policy string) string {
	if policy == "" {
		return "none"
	}
	return policy
}

// numaNodes are the machine's NUMA nodes; nil without resource managers.
func (r resourceManagers) numaNodes() []int { return r.numa }

// RemovePod forgets a finished pod: its CPUs back to the shared pool, its
// memory back to its NUMA nodes.
func (r resourceManagers) RemovePod(uid types.UID) {
	if r.cpu != nil {
		r.cpu.RemovePod(uid)
		r.topology.RemovePod(uid)
	}
	if r.memory != nil {
		r.memory.RemovePod(uid)
	}
}

// resourceReconciler writes the CPU manager's cpusets into running containers
// every CPUManagerReconcilePeriod, as upstream's reconcileState: the shared
// pool shrinks and grows as pods take and release exclusive CPUs. On the same
// pass the memory manager releases what inactive pods held and the memory of
// regular init containers once a later container runs (upstream's
// removeStaleState and AddContainer).
type resourceReconciler struct {
	cpu    *cpumanager.Manager // nil unless the static policy
	mem    *memorymanager.Manager
	view   *podView
	cache  *pleg.Cache
	rt     cri.ContainerManager
	clock  Clock
	period time.Duration
	log    *slog.Logger
}

func (r *resourceReconciler) run(ctx context.Context) error {
	period := r.period
	if period <= 0 {
		period = 10 * time.Second
	}
	t := r.clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		r.reconcile(ctx)
	}
}

// reconcile is one pass: the active pods' running containers, newest
// attempt of each, from the PLEG's cache.
func (r *resourceReconciler) reconcile(ctx context.Context) {
	active := r.view.admitted("")
	if r.mem != nil {
		r.mem.RemoveStaleState(active)
	}
	var running []cpumanager.RunningContainer
	for _, p := range active {
		st, err := r.cache.Get(p.UID)
		if err != nil || st == nil {
			continue
		}
		seen := map[string]bool{}
		for _, c := range st.Containers {
			name := c.GetMetadata().GetName()
			if seen[name] {
				continue
			}
			seen[name] = true
			if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
				running = append(running, cpumanager.RunningContainer{PodUID: p.UID, Name: name, ID: c.GetId()})
				if spec := podspec.Container(p, name); r.mem != nil && spec != nil {
					r.mem.AddContainer(p, spec)
				}
			}
		}
	}
	if r.cpu == nil {
		return
	}
	for _, u := range r.cpu.Reconcile(active, running) {
		err := r.rt.UpdateContainerResources(ctx, u.ID, &runtimeapi.ContainerResources{
			Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: u.CPUs.String()}})
		if err != nil {
			r.cpu.Failed(u.ID)
			r.log.Info("Failed to update a container's cpuset", "podUID", u.PodUID, "container", u.Name, "cpus", u.CPUs.String(), "err", err)
		}
	}
}

// keepingQuota gives containers the CPU manager's cpusets without lifting
// the CFS quota of those holding exclusive CPUs: upstream with its
// DisableCPUQuotaWithExclusiveCPUs gate off
// (Resources.KeepCPUQuotaWithExclusiveCPUs).
type keepingQuota struct{ cpus *cpumanager.Manager }

// ContainerCPUSet is the CPU manager's cpuset of c, never exclusive.
func (k keepingQuota) ContainerCPUSet(pod *v1.Pod, c *v1.Container) (string, bool) {
	cpus, _ := k.cpus.ContainerCPUSet(pod, c)
	return cpus, false
}
