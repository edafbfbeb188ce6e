package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// resourceManagers are the CPU manager and the topology manager; both nil
// when every policy is "none" and no option is set, as a node without them
// behaves the same.
type resourceManagers struct {
	cpu      *cpumanager.Manager
	topology *topologymanager.Manager
}

// newResourceManagers builds the managers of Options.Resources.
func newResourceManagers(opts Options, log *slog.Logger) (resourceManagers, error) {
	r := opts.Resources
	if orNone(r.CPUManagerPolicy) == cpumanager.PolicyNone && orNone(r.TopologyManagerPolicy) == topologymanager.PolicyNone &&
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
	if rm, ok := opts.Metrics.(ResourceMetrics); ok {
		cpuMetrics = rm
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
	tm.AddHintProvider(cpu)
	return resourceManagers{cpu: cpu, topology: tm}, nil
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

// RemovePod forgets a finished pod: its CPUs back to the shared pool.
func (r resourceManagers) RemovePod(uid types.UID) {
	if r.cpu != nil {
		r.cpu.RemovePod(uid)
		r.topology.RemovePod(uid)
	}
}

// cpuReconciler writes the CPU manager's cpusets into running containers
// every CPUManagerReconcilePeriod, as upstream's reconcileState: the shared
// pool shrinks and grows as pods take and release exclusive CPUs.
type cpuReconciler struct {
	cpu    *cpumanager.Manager
	view   *podView
	cache  *pleg.Cache
	rt     cri.ContainerManager
	clock  Clock
	period time.Duration
	log    *slog.Logger
}

func (r *cpuReconciler) run(ctx context.Context) error {
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
func (r *cpuReconciler) reconcile(ctx context.Context) {
	active := r.view.admitted("")
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
			}
		}
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
