package prometheus

import (
	"context"
	"fmt"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
)

// Node is what the scrape-time gauges read; *agent.Agent implements it.
// Only the runtime's ListPodSandbox and ListContainers are called.
type Node interface {
	// PodStatuses returns the desired pods with their current statuses.
	PodStatuses() []v1.Pod
	// Runtime returns the container runtime the node drives.
	Runtime() agent.Runtime
	// Healthy returns nil while the node is healthy, else the reasons.
	Healthy() error
	// NodeName returns the node's name.
	NodeName() string
}

var _ Node = (*agent.Agent)(nil)

// RegisterNode adds the gauges read from n at every scrape:
//
//	kubelet_node_name{node}                     always 1, the node's name in its label
//	kubelet_running_pods                        pod sandboxes that are ready
//	kubelet_running_containers{container_state} containers by CRI state
//	                                            (created, running, exited, unknown)
//	kubeletkit_pods{phase}                      desired pods by phase (none yet: Pending)
//	kubeletkit_pleg_healthy                     1 while n.Healthy returns nil: the PLEG
//	                                            relists in time and the sync loop is not stuck
//
// A state or phase that no container or pod has is absent rather than 0.
// A runtime call that fails or takes longer than
// Options.ScrapeTimeout fails its gauge for that scrape (Handler serves the
// others). Call it once, after agent.New: it fails when a node is already
// registered.
func (m *Metrics) RegisterNode(n Node) error {
	if n == nil {
		return fmt.Errorf("register node: node is nil: %w", ErrInvalidArgument)
	}
	if err := m.reg.Register(newNodeCollector(m.timeout, n)); err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	return nil
}

// nodeCollector computes the node's gauges at scrape time.
type nodeCollector struct {
	timeout time.Duration
	node    Node

	nodeName, runningPods, runningContainers, pods, healthy *prom.Desc
}

func newNodeCollector(timeout time.Duration, n Node) *nodeCollector {
	return &nodeCollector{
		timeout: timeout,
		node:    n,
		nodeName: prom.NewDesc("kubelet_node_name",
			alpha("The node's name. The count is always 1."), []string{"node"}, nil),
		runningPods: prom.NewDesc("kubelet_running_pods",
			alpha("Number of pods that have a running pod sandbox"), nil, nil),
		runningContainers: prom.NewDesc("kubelet_running_containers",
			alpha("Number of containers currently running"), []string{"container_state"}, nil),
		pods: prom.NewDesc("kubeletkit_pods",
			"Number of desired pods by phase", []string{"phase"}, nil),
		healthy: prom.NewDesc("kubeletkit_pleg_healthy",
			"1 when the PLEG relisted within its threshold and the sync loop is not stuck", nil, nil),
	}
}

var _ prom.Collector = (*nodeCollector)(nil)

// Describe implements prom.Collector.
func (c *nodeCollector) Describe(ch chan<- *prom.Desc) {
	ch <- c.nodeName
	ch <- c.runningPods
	ch <- c.runningContainers
	ch <- c.pods
	ch <- c.healthy
}

// Collect implements prom.Collector.
func (c *nodeCollector) Collect(ch chan<- prom.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ch <- prom.MustNewConstMetric(c.nodeName, prom.GaugeValue, 1, c.node.NodeName())
	rt := c.node.Runtime()
	ready := &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}
	if sbs, err := rt.ListPodSandbox(ctx, ready); err != nil {
		ch <- prom.NewInvalidMetric(c.runningPods, fmt.Errorf("list pod sandboxes: %w", err))
	} else {
		ch <- prom.MustNewConstMetric(c.runningPods, prom.GaugeValue, float64(len(sbs)))
	}
	if cs, err := rt.ListContainers(ctx, nil); err != nil {
		ch <- prom.NewInvalidMetric(c.runningContainers, fmt.Errorf("list containers: %w", err))
	} else {
		byState := map[string]int{}
		for _, ctr := range cs {
			byState[containerState(ctr.GetState())]++
		}
		for state, n := range byState {
			ch <- prom.MustNewConstMetric(c.runningContainers, prom.GaugeValue, float64(n), state)
		}
	}
	byPhase := map[v1.PodPhase]int{}
	for _, p := range c.node.PodStatuses() {
		phase := p.Status.Phase
		if phase == "" {
			phase = v1.PodPending
		}
		byPhase[phase]++
	}
	for phase, n := range byPhase {
		ch <- prom.MustNewConstMetric(c.pods, prom.GaugeValue, float64(n), string(phase))
	}
	healthy := 0.0
	if c.node.Healthy() == nil {
		healthy = 1
	}
	ch <- prom.MustNewConstMetric(c.healthy, prom.GaugeValue, healthy)
}

// containerState names a CRI state as upstream's container_state label.
func containerState(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	default:
		return "unknown"
	}
}
