package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubeletkit/kubeletkit/examples/nodefarm"
)

// runLabel marks the pods of one load run, with the run's ID.
const runLabel = "scalenodes.kubeletkit.io/run"

// loadConfig is what the load flags say.
type loadConfig struct {
	kubeconfig, prefix, namespace, image string
	nodes, podsPerNode, probes, burst    int
	rate, qps                            float64
	timeout, steady                      time.Duration
}

// runLoad creates pods on the nodes at a set rate, measures how long each
// took to be Running and Ready through a watch, then watches the nodes'
// leases for a while; it fails when a pod does not become Ready in time.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c loadConfig
	fs := flag.NewFlagSet("scalenodes load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the API server (an admin: it creates pods)")
	fs.IntVar(&c.nodes, "nodes", 10, "how many nodes the pods go to (they must be Ready)")
	fs.StringVar(&c.prefix, "node-name-prefix", nodefarm.DefaultNamePrefix, "prefix of the nodes' names, as scalenodes nodes")
	fs.IntVar(&c.podsPerNode, "pods-per-node", 10, "pods bound to each node (spec.nodeName: no scheduler needed)")
	fs.Float64Var(&c.rate, "rate", 20, "pods created per second")
	fs.IntVar(&c.probes, "probes", 2, "probes per pod's container, all exec: 1 readiness, 2 and liveness, 3 and startup")
	fs.StringVar(&c.namespace, "namespace", "default", "namespace of the pods (its default ServiceAccount must exist)")
	fs.StringVar(&c.image, "image", "registry.k8s.io/pause:3.10", "image of the pods' container")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "how long the nodes may take to be Ready, and then the pods")
	fs.DurationVar(&c.steady, "steady", 0, "how long to watch the nodes' leases once every pod is Ready (0: not at all)")
	fs.Float64Var(&c.qps, "kube-api-qps", 200, "queries per second of the load generator's client")
	fs.IntVar(&c.burst, "kube-api-burst", 400, "burst of the load generator's client")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.nodes < 1 || c.podsPerNode < 1 || c.rate <= 0 || c.probes < 0 || c.probes > 3 || c.timeout <= 0 || c.steady < 0 {
		return fmt.Errorf("--nodes=%d, --pods-per-node=%d, --rate=%g, --probes=%d, --timeout=%s, --steady=%s: out of range",
			c.nodes, c.podsPerNode, c.rate, c.probes, c.timeout, c.steady)
	}
	cl, err := client(c.kubeconfig, c.qps, c.burst)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout*2+c.steady+time.Minute)
	defer cancel()

	names := nodeNames(c.prefix, c.nodes)
	start := time.Now()
	if err := waitNodesReady(ctx, cl, names, c.timeout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "load: %d nodes Ready after %s\n", c.nodes, time.Since(start).Round(time.Millisecond))

	runID := fmt.Sprintf("%d", time.Now().UnixNano())
	total := c.nodes * c.podsPerNode
	tr := newTracker(total)
	w, err := watchPods(ctx, cl, c.namespace, runLabel+"="+runID)
	if err != nil {
		return err
	}
	defer w.Stop()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ev := range w.ResultChan() {
			switch p, ok := ev.Object.(*v1.Pod); {
			case ok && (ev.Type == watch.Added || ev.Type == watch.Modified):
				tr.observe(p, time.Now())
			case ev.Type == watch.Error:
				fmt.Fprintf(stderr, "load: the pods' watch ended: %v\n", apierrors.FromObject(ev.Object))
			}
		}
	}()

	start = time.Now()
	if err := createPods(ctx, cl, c, names, runID, tr); err != nil {
		return err
	}
	created := time.Since(start)
	fmt.Fprintf(stdout, "load: %d pods created in %s (%.1f/s)\n", total, created.Round(time.Millisecond), float64(total)/created.Seconds())

	deadline := time.NewTimer(c.timeout)
	defer deadline.Stop()
	select {
	case <-tr.allReady:
	case <-deadline.C:
	case <-ctx.Done():
	}
	w.Stop()
	<-watchDone
	s := tr.summary()
	fmt.Fprintf(stdout, "load: %d/%d pods Running, %d/%d Ready %s after the first was created\n", s.running, total, s.ready, total, time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "load: pod startup, creation to Running (watched): %s\n", s.toRunning)
	fmt.Fprintf(stdout, "load: pod startup, creation to Ready (watched):   %s\n", s.toReady)
	if s.ready < total {
		return fmt.Errorf("%d of %d pods did not become Ready within %s (%s)", total-s.ready, total, c.timeout, tr.notReady(5))
	}
	if c.steady > 0 {
		ages, err := leaseAges(ctx, cl, names, c.steady, 2*time.Second)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "load: node heartbeat, age of the Lease's renewTime over %s (%d samples): %s\n", c.steady, len(ages), percentiles(ages))
	}
	return nil
}

// watchPods watches the pods of namespace that selector selects from now
// on, resuming where it was whenever the API server ends the watch (it
// closes a watcher that falls behind, as the load generator's may while
// the machine is busy with the nodes): a lost event would be a pod seen
// Ready late or never.
func watchPods(ctx context.Context, cl kubernetes.Interface, namespace, selector string) (watch.Interface, error) {
	pods := cl.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return pods.Watch(ctx, o)
		}})
	if err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	return w, nil
}

// nodeNames returns the names of n nodes of prefix, as nodefarm names them.
func nodeNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// waitNodesReady waits until every node of names is Ready, looking once a
// second, for at most timeout.
func waitNodesReady(ctx context.Context, cl kubernetes.Interface, names []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ready := 0
	for {
		list, err := cl.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			ready = 0
			for _, n := range list.Items {
				if want[n.Name] && nodeReady(&n) {
					ready++
				}
			}
			if ready == len(names) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d nodes Ready after %s", ready, len(names), timeout)
		case <-tick.C:
		}
	}
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// loadPod is the i-th pod of a run: one container with c.probes exec
// probes, bound to node.
func loadPod(c loadConfig, runID, node string, i int) *v1.Pod {
	ctr := v1.Container{Name: "app", Image: c.image,
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}}}
	probe := func(period int32) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: period}
	}
	if c.probes >= 1 {
		ctr.ReadinessProbe = probe(10)
	}
	if c.probes >= 2 {
		ctr.LivenessProbe = probe(10)
	}
	if c.probes >= 3 {
		ctr.StartupProbe = probe(1)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%s-%05d", runID, i), Namespace: c.namespace,
			Labels: map[string]string{runLabel: runID}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{ctr}},
	}
}

// createPods creates the run's pods at c.rate, spread over the nodes in
// turn, with up to 16 creations in flight.
func createPods(ctx context.Context, cl kubernetes.Interface, c loadConfig, names []string, runID string, tr *tracker) error {
	total := len(names) * c.podsPerNode
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.rate))
	defer tick.Stop()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 16)
	for i := range total {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				wg.Wait()
				return ctx.Err()
			}
		}
		p := loadPod(c, runID, names[i%len(names)], i)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			tr.created(p.Name, time.Now())
			if _, err := cl.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				mu.Lock()
				if first == nil {
					first = fmt.Errorf("create pod %s: %w", p.Name, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// tracker keeps, per pod, when its creation was sent and when the watch
// first showed it Running and Ready.
type tracker struct {
	total    int
	mu       sync.Mutex
	pods     map[string]*podTimes
	ready    int
	allReady chan struct{}
}

type podTimes struct{ created, running, ready time.Time }

func newTracker(total int) *tracker {
	return &tracker{total: total, pods: map[string]*podTimes{}, allReady: make(chan struct{})}
}

func (t *tracker) get(name string) *podTimes {
	p := t.pods[name]
	if p == nil {
		p = &podTimes{}
		t.pods[name] = p
	}
	return p
}

// created records that pod name's creation is sent at now.
func (t *tracker) created(name string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.get(name).created = now
}

// observe records what the watch shows of p at now.
func (t *tracker) observe(p *v1.Pod, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pt := t.get(p.Name)
	if pt.running.IsZero() && p.Status.Phase == v1.PodRunning {
		pt.running = now
	}
	if pt.ready.IsZero() && podReady(p) {
		pt.ready = now
		t.ready++
		if t.ready == t.total {
			close(t.allReady)
		}
	}
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// loadSummary is what a run measured.
type loadSummary struct {
	running, ready     int
	toRunning, toReady dist
}

// summary returns the counts and the latencies of the pods whose creation
// was sent.
func (t *tracker) summary() loadSummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s loadSummary
	var running, ready []time.Duration
	for _, p := range t.pods {
		if p.created.IsZero() {
			continue
		}
		if !p.running.IsZero() {
			s.running++
			running = append(running, p.running.Sub(p.created))
		}
		if !p.ready.IsZero() {
			s.ready++
			ready = append(ready, p.ready.Sub(p.created))
		}
	}
	s.toRunning, s.toReady = percentiles(running), percentiles(ready)
	return s
}

// notReady names up to n pods that are not Ready.
func (t *tracker) notReady(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, p := range t.pods {
		if p.ready.IsZero() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	if len(out) > n {
		out = append(out[:n], "...")
	}
	return strings.Join(out, ", ")
}

// dist is a distribution's percentiles.
type dist struct {
	n                       int
	p50, p90, p99, max, min time.Duration
}

// percentiles returns the nearest-rank percentiles of d.
func percentiles(d []time.Duration) dist {
	if len(d) == 0 {
		return dist{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return dist{n: len(s), min: s[0], p50: rank(0.50), p90: rank(0.90), p99: rank(0.99), max: s[len(s)-1]}
}

func (d dist) String() string {
	if d.n == 0 {
		return "no samples"
	}
	r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s (min %s, max %s, n=%d)", r(d.p50), r(d.p90), r(d.p99), r(d.min), r(d.max), d.n)
}

// leaseAges samples, every period for d, how old each node's Lease renewal
// is.
func leaseAges(ctx context.Context, cl kubernetes.Interface, names []string, d, period time.Duration) ([]time.Duration, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	end := time.Now().Add(d)
	tick := time.NewTicker(period)
	defer tick.Stop()
	var ages []time.Duration
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		list, err := cl.CoordinationV1().Leases(v1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list leases: %w", err)
		}
		now := time.Now()
		seen := 0
		for i := range list.Items {
			if l := &list.Items[i]; want[l.Name] {
				seen++
				ages = append(ages, leaseAge(l, now))
			}
		}
		if seen < len(names) {
			return nil, errors.New("lease: " + fmt.Sprint(len(names)-seen) + " nodes have no Lease")
		}
	}
	return ages, nil
}

// leaseAge is how long ago l was renewed at now.
func leaseAge(l *coordinationv1.Lease, now time.Time) time.Duration {
	if l.Spec.RenewTime == nil {
		return now.Sub(l.CreationTimestamp.Time)
	}
	return now.Sub(l.Spec.RenewTime.Time)
}
