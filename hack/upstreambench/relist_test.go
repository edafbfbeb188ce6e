package upstreambench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	cadvisorapi "github.com/google/cadvisor/info/v1"
	"go.opentelemetry.io/otel/trace/noop"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	"k8s.io/kubernetes/pkg/kubelet/kuberuntime"
	"k8s.io/kubernetes/pkg/kubelet/logs"
	upstream "k8s.io/kubernetes/pkg/kubelet/pleg"
	proberesults "k8s.io/kubernetes/pkg/kubelet/prober/results"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/pleg"
)

// plegChannelCapacity is the kubelet's (pkg/kubelet/kubelet.go): upstream's
// relist sends on a channel of this capacity and drops what does not fit.
const plegChannelCapacity = 1000

// subject is one PLEG relisting its own node.
type subject interface {
	relist(tb testing.TB)
	// collect returns how many events reached the consumer since the last
	// call; want is how many the relists since then produced.
	collect(tb testing.TB, want int) int
}

// upstreamPLEG is v1.36.3's GenericPLEG over the kuberuntime manager that
// NewKubeGenericRuntimeManager builds, as the kubelet wires them, on the
// node's runtime. Its logger discards (a dropped event would otherwise cost
// an error line), and its metrics are not registered, so they cost what an
// unregistered component-base metric costs: next to nothing.
type upstreamPLEG struct {
	g interface{ Relist() }
	// ch is the events channel, drained by collect.
	ch chan *upstream.PodLifecycleEvent
}

func newUpstream(tb testing.TB, rt relistRuntime) *upstreamPLEG {
	tb.Helper()
	return newUpstreamOn(runtimeManager(tb, rt))
}

func newUpstreamOn(rt kubecontainer.Runtime) *upstreamPLEG {
	ch := make(chan *upstream.PodLifecycleEvent, plegChannelCapacity)
	g := upstream.NewGenericPLEG(logr.Discard(), rt, ch,
		&upstream.RelistDuration{RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute},
		kubecontainer.NewCache(), clock.RealClock{})
	return &upstreamPLEG{g: g.(interface{ Relist() }), ch: ch}
}

// runtimeManager builds upstream's kuberuntime manager on rt, as the
// kubelet does (NewKubeGenericRuntimeManager), with fakes for what a relist
// never touches.
func runtimeManager(tb testing.TB, rt relistRuntime) kubecontainer.Runtime {
	tb.Helper()
	m, _, err := kuberuntime.NewKubeGenericRuntimeManager(
		context.Background(),
		&record.FakeRecorder{},
		proberesults.NewManager(), proberesults.NewManager(), proberesults.NewManager(),
		tb.TempDir(), tb.TempDir(),
		&cadvisorapi.MachineInfo{},
		podStates{},
		110,
		&containertest.FakeOS{},
		&containertest.FakeRuntimeHelper{},
		nil, // HTTP client for lifecycle hooks: none run
		flowcontrol.NewBackOff(time.Second, 300*time.Second),
		false, nil, 5, 10, // image pulls: none happen
		"NeverVerify", nil, "", "",
		nil,
		true, metav1.Duration{Duration: 100 * time.Millisecond},
		criService{rt: rt},
		nil, // image service: a relist makes no image call
		cm.NewFakeContainerManager(),
		logs.NewStubContainerLogManager(),
		nil, false, "",
		func() v1.ResourceList { return nil },
		0.9, "",
		nil,
		noop.NewTracerProvider(),
		nil, nil, nil,
	)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// podsRuntime is a kubecontainer.Runtime that answers GetPods and
// GetPodStatus with what upstream's kuberuntime manager answered on a
// stubRuntime in each of its states, following the stub's state: upstream's
// GenericPLEG on it costs what the PLEG itself costs, without the
// conversion from CRI, the strictest comparison for pleg (which does that
// part itself). Any other call hits the nil embedded interface and panics.
type podsRuntime struct {
	kubecontainer.Runtime
	stub   *stubRuntime
	states [2]podsState
}

type podsState struct {
	pods     []*kubecontainer.Pod
	statuses map[types.UID]*kubecontainer.PodStatus
}

func newPodsRuntime(tb testing.TB, stub *stubRuntime) *podsRuntime {
	tb.Helper()
	ctx := context.Background()
	m := runtimeManager(tb, stub)
	r := &podsRuntime{stub: stub}
	defer func(cur int) { stub.cur = cur }(stub.cur)
	for i := range r.states {
		stub.cur = i
		pods, err := m.GetPods(ctx, true)
		if err != nil {
			tb.Fatal(err)
		}
		st := podsState{pods: pods, statuses: make(map[types.UID]*kubecontainer.PodStatus, len(pods))}
		for _, p := range pods {
			if st.statuses[p.ID], err = m.GetPodStatus(ctx, p); err != nil {
				tb.Fatal(err)
			}
		}
		r.states[i] = st
	}
	return r
}

func (r *podsRuntime) GetPods(context.Context, bool) ([]*kubecontainer.Pod, error) {
	return r.states[r.stub.cur].pods, nil
}

// GetPodStatus returns a copy, as the kuberuntime manager returns a new
// status on every call (and the PLEG writes the IPs into it).
func (r *podsRuntime) GetPodStatus(_ context.Context, pod *kubecontainer.Pod) (*kubecontainer.PodStatus, error) {
	st := *r.states[r.stub.cur].statuses[pod.ID]
	return &st, nil
}

func (u *upstreamPLEG) relist(testing.TB) { u.g.Relist() }

// collect drains what the channel holds: whatever did not fit was dropped.
func (u *upstreamPLEG) collect(_ testing.TB, _ int) int {
	for n := 0; ; n++ {
		select {
		case <-u.ch:
		default:
			return n
		}
	}
}

// podStates is the kuberuntime manager's view of pod workers: no pod is
// being terminated or removed.
type podStates struct{}

func (podStates) IsPodTerminationRequested(types.UID) bool { return false }
func (podStates) ShouldPodContentBeRemoved(types.UID) bool { return false }
func (podStates) ShouldPodRuntimeBeRemoved(types.UID) bool { return false }

// ourPLEG is pleg.Generic on the node's runtime, its events taken from the
// Events channel (Run delivers them; its own relists are an hour apart, so
// every relist after the first is the benchmark's) or, with onEvents, by
// an OnEvents function, the way package agent takes them.
type ourPLEG struct {
	g       *pleg.Generic
	onEvent atomic.Int64 // events handed to OnEvents
	direct  bool
	stop    func()
}

func newOurs(tb testing.TB, rt relistRuntime, onEvents bool) *ourPLEG {
	tb.Helper()
	p := &ourPLEG{direct: onEvents}
	opts := pleg.GenericOptions{Runtime: criService{rt: rt}, RelistPeriod: time.Hour}
	if onEvents {
		opts.OnEvents = func(evs []pleg.Event) { p.onEvent.Add(int64(len(evs))) }
	}
	g, err := pleg.NewGeneric(opts)
	if err != nil {
		tb.Fatal(err)
	}
	p.g = g
	if onEvents {
		p.stop = func() {}
		return p
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Run(ctx) })
	p.stop = func() { cancel(); wg.Wait() }
	tb.Cleanup(p.stop)
	return p
}

func (p *ourPLEG) relist(tb testing.TB) {
	if err := p.g.Relist(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// collect takes want events from the channel, failing after 10s without
// one: pleg never drops an event, so fewer would be a bug.
func (p *ourPLEG) collect(tb testing.TB, want int) int {
	if p.direct {
		return int(p.onEvent.Swap(0))
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	for n := 0; n < want; n++ {
		select {
		case <-p.g.Events():
		case <-t.C:
			tb.Fatalf("%d events delivered, want %d", n, want)
		}
	}
	return want
}

// subjects are the PLEGs measured, by sub-benchmark name.
var subjects = []struct {
	name     string
	new      func(testing.TB, relistRuntime) subject
	stubOnly bool // needs a stubRuntime
}{
	{"upstream", func(tb testing.TB, rt relistRuntime) subject { return newUpstream(tb, rt) }, false},
	{"kubeletkit", func(tb testing.TB, rt relistRuntime) subject { return newOurs(tb, rt, false) }, false},
	{"kubeletkit-onevents", func(tb testing.TB, rt relistRuntime) subject { return newOurs(tb, rt, true) }, false},
	{"upstream-pleg-only", func(tb testing.TB, rt relistRuntime) subject {
		return newUpstreamOn(newPodsRuntime(tb, rt.(*stubRuntime)))
	}, true},
}

// runtimes are the workloads, by sub-benchmark name: cri/fake; cri-api's
// FakeRuntimeService; and a stub serving what cri/fake listed and reported,
// which leaves the PLEGs' own cost.
var runtimes = []struct {
	name string
	new  func(testing.TB, int) workload
}{
	{"fake", func(tb testing.TB, pods int) workload { return newFakeNode(tb, pods) }},
	{"criapi", func(tb testing.TB, pods int) workload { return newCRIAPINode(tb, pods) }},
	{"stub", func(tb testing.TB, pods int) workload { return newStub(tb, pods) }},
}

// runAllChanged relists pods of a sandbox and two containers where every
// pod changed since the last relist (a third container added, or removed
// again: one event, or two). Changing the runtime and taking the events from
// the channel are not timed; handing them to OnEvents is. It reports the
// events the relists should have delivered and the share that did not reach
// the consumer.
func runAllChanged(b *testing.B, w workload, pods int, newSubject func(testing.TB, relistRuntime) subject) {
	p := newSubject(b, w.runtime())
	p.relist(b) // the first relist: every object is new
	p.collect(b, 3*pods)
	var want, got int
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		n := w.change(b)
		b.StartTimer()
		p.relist(b)
		b.StopTimer()
		want += n
		got += p.collect(b, n)
		b.StartTimer()
	}
	b.ReportMetric(float64(want)/float64(b.N), "events/op")
	b.ReportMetric(100*float64(want-got)/float64(want), "%dropped")
}

// BenchmarkRelistAllChanged is the anchor for pleg's all-changed relist: both
// PLEGs on each runtime, 100 and 1,000 pods, every pod changed.
func BenchmarkRelistAllChanged(b *testing.B) {
	for _, rt := range runtimes {
		for _, pods := range []int{100, 1000} {
			for _, s := range subjects {
				if s.stubOnly && rt.name != "stub" {
					continue
				}
				b.Run(fmt.Sprintf("runtime=%s/pods=%d/%s", rt.name, pods, s.name), func(b *testing.B) {
					runAllChanged(b, rt.new(b, pods), pods, s.new)
				})
			}
		}
	}
}

// BenchmarkRelistAllChangedLatency is the same on cri/fake with 1ms of
// latency on every status call (3 or 4 calls a pod): upstream inspects one
// pod at a time, pleg Parallelism (8) at a time. Slow: run it with
// -benchtime=3x.
func BenchmarkRelistAllChangedLatency(b *testing.B) {
	for _, pods := range []int{100, 1000} {
		for _, s := range subjects {
			if s.stubOnly {
				continue
			}
			b.Run(fmt.Sprintf("pods=%d/%s", pods, s.name), func(b *testing.B) {
				n := newFakeNode(b, pods)
				rt := n.rt.(*fake.Runtime)
				rt.InjectFault(fake.PodSandboxStatus, fake.Fault{Latency: time.Millisecond})
				rt.InjectFault(fake.ContainerStatus, fake.Fault{Latency: time.Millisecond})
				runAllChanged(b, n, pods, s.new)
			})
		}
	}
}
