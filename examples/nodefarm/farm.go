package nodefarm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/status/node"
)

// ErrInvalidOptions is wrapped by New's errors about its options.
var ErrInvalidOptions = errors.New("invalid options")

// DefaultNamePrefix is Options.NamePrefix's default.
const DefaultNamePrefix = "hollow-"

// Options configure a Farm.
type Options struct {
	// Nodes is how many nodes to run, at least 1.
	Nodes int
	// NamePrefix starts every node's name, which goes on with the node's
	// index in four digits or more (hollow-0000, hollow-0001, ...). Empty
	// means DefaultNamePrefix.
	NamePrefix string
	// RootDir holds a directory per node (RootDir/<node>), the agent's
	// RootDir: pod directories, logs, volumes. Required.
	RootDir string
	// Script scripts node i's fake runtime; nil scripts nothing.
	Script func(i int) Script
	// Machine is the hardware every node reports (capacity, system info).
	// Nil means DefaultMachine.
	Machine node.Machine
	// NodeLeaseDuration and NodeLabels are every node's
	// (apiserver.JoinOptions).
	NodeLeaseDuration time.Duration
	NodeLabels        map[string]string
	// Agent, when set, adjusts node i's agent options after the farm has
	// filled them (timings, eviction, ...). It must not replace what Join
	// applied (sinks, sources, Recorder).
	Agent func(i int, o *agent.Options)
	// Logger receives every node's logs, with a "node" attribute; nil
	// discards them.
	Logger *slog.Logger
}

// DefaultMachine is the hardware a node reports by default: 32 CPUs,
// 256Gi of memory, 1Ti of ephemeral storage and upstream's 110 pods, as
// kubemark's hollow nodes report a machine they do not have.
var DefaultMachine node.Machine = staticMachine{
	v1.ResourceCPU:              resource.MustParse("32"),
	v1.ResourceMemory:           resource.MustParse("256Gi"),
	v1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	v1.ResourcePods:             resource.MustParse("110"),
}

// staticMachine is a node.Machine of fixed capacity.
type staticMachine v1.ResourceList

func (m staticMachine) Capacity(context.Context) (v1.ResourceList, error) {
	return v1.ResourceList(m).DeepCopy(), nil
}

func (m staticMachine) SystemInfo(context.Context) (v1.NodeSystemInfo, error) {
	return v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", KernelVersion: "kubeletkit-nodefarm", OSImage: "kubeletkit nodefarm"}, nil
}

// Node is one node of a farm.
type Node struct {
	// Name is the node's name.
	Name string
	// Agent is the node's kubelet.
	Agent *agent.Agent
	// Runtime is the node's fake runtime, which tests and tools may script
	// further (SetRules, InjectFault, ExitContainer ...).
	Runtime agent.Runtime

	rt     *scriptedRuntime
	joined *apiserver.Joined
}

// Farm is many nodes in one process: each a whole package agent kubelet
// with its own name, fake runtime, Node and Lease, joined to one API
// server through one clientset, sharing the adapters that do not depend
// on the node (apiserver.Shared). Build it with New and run it with Run.
type Farm struct {
	shared *apiserver.Shared
	nodes  []*Node
	log    *slog.Logger
}

// New builds opts.Nodes agents joined to the API server client talks to.
// Give client's rest.Config room for every node: upstream kubelet's 50
// queries per second and burst of 100, times the number of nodes. New
// starts nothing.
func New(client kubernetes.Interface, opts Options) (*Farm, error) {
	if opts.Nodes < 1 {
		return nil, fmt.Errorf("nodefarm: %d nodes: %w", opts.Nodes, ErrInvalidOptions)
	}
	if opts.RootDir == "" {
		return nil, fmt.Errorf("nodefarm: no root directory: %w", ErrInvalidOptions)
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = DefaultNamePrefix
	}
	if opts.Machine == nil {
		opts.Machine = DefaultMachine
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	shared, err := apiserver.NewShared(client, apiserver.SharedOptions{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("nodefarm: %w", err)
	}
	f := &Farm{shared: shared, log: log}
	for i := range opts.Nodes {
		n, err := f.newNode(client, i, opts)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("nodefarm: node %d: %w", i, err)
		}
		f.nodes = append(f.nodes, n)
	}
	return f, nil
}

// newNode builds node i.
func (f *Farm) newNode(client kubernetes.Interface, i int, opts Options) (*Node, error) {
	var s Script
	if opts.Script != nil {
		s = opts.Script(i)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s%04d", opts.NamePrefix, i)
	log := f.log.With("node", name)
	j, err := apiserver.Join(client, name, apiserver.JoinOptions{Shared: f.shared, NodeLabels: opts.NodeLabels,
		NodeLeaseDuration: opts.NodeLeaseDuration, Logger: log})
	if err != nil {
		return nil, err
	}
	rt := newRuntime(i, clock.RealClock{}, s)
	ao := agent.Options{NodeName: j.NodeName(), Runtime: rt, RootDir: filepath.Join(opts.RootDir, j.NodeName()),
		// The cluster DNS of a kubeadm cluster's nodes: ClusterFirst pods
		// get it, without a MissingClusterDNS warning for each pod.
		Node:   agent.NodeOptions{Machine: opts.Machine, ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
		Logger: log,
		// Volumes are files under the node's directory: a farm mounts no
		// tmpfs per pod even as root.
		Security: agent.SecurityOptions{NoMounts: true}}
	if err := j.Apply(&ao); err != nil {
		rt.Close()
		return nil, err
	}
	// The node's pods measured as on any node, the node itself as the
	// machine it declares (machineStats).
	linux, err := stats.NewLinux(stats.LinuxOptions{Runtime: rt, RootDir: ao.RootDir, PodLogsDir: filepath.Join(ao.RootDir, "logs")})
	if err != nil {
		rt.Close()
		return nil, err
	}
	ao.Eviction.Stats = machineStats{inner: linux, machine: opts.Machine, clock: clock.RealClock{}}
	if opts.Agent != nil {
		opts.Agent(i, &ao)
	}
	a, err := agent.New(ao)
	if err != nil {
		rt.Close()
		return nil, err
	}
	return &Node{Name: j.NodeName(), Agent: a, Runtime: rt, rt: rt, joined: j}, nil
}

// Nodes returns the farm's nodes, in index order.
func (f *Farm) Nodes() []*Node { return f.nodes }

// Run runs the shared adapters and every node until ctx ends, and returns
// once all have ended, with every node's error. A node whose agent fails
// ends alone (its error is logged); the others run on. Run may be called
// once.
func (f *Farm) Run(ctx context.Context) error {
	defer f.close()
	sharedCtx, stopShared := context.WithCancel(ctx)
	defer stopShared()
	var (
		shared sync.WaitGroup
		nodes  sync.WaitGroup
		mu     sync.Mutex
		errs   []error
	)
	shared.Go(func() {
		if err := f.shared.Run(sharedCtx); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("nodefarm: %w", err))
			mu.Unlock()
		}
	})
	for _, n := range f.nodes {
		nodes.Go(func() {
			if err := n.joined.Run(ctx, n.Agent); err != nil && !errors.Is(err, context.Canceled) {
				f.log.Error("node stopped", "node", n.Name, "err", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("nodefarm: %w", err))
				mu.Unlock()
			}
		})
	}
	nodes.Wait()
	stopShared()
	shared.Wait()
	return errors.Join(errs...)
}

// close closes the nodes' runtimes.
func (f *Farm) close() {
	for _, n := range f.nodes {
		n.rt.Close()
	}
}
