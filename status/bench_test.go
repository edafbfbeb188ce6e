package status

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// runningPod returns a running pod with n containers, its runtime view, and
// the status Generate gave it last time (also its API status): the steady
// state of a healthy pod.
func runningPod(b testing.TB, n int) (*v1.Pod, Input) {
	var containers []v1.Container
	var rtContainers []*runtimeapi.ContainerStatus
	for i := range n {
		name := fmt.Sprintf("c%02d", i)
		containers = append(containers, ctr(name))
		rtContainers = append(rtContainers, running(name, "id-"+name, n-i, 0))
	}
	pod := mkPod(v1.RestartPolicyAlways, nil, containers...)
	in := Input{Pod: pod, Runtime: rt(rtContainers...), RuntimeName: "containerd", HostIPs: []string{"192.168.1.10"}, Now: at(100)}
	first, err := Generate(in)
	if err != nil {
		b.Fatal(err)
	}
	pod.Status = first
	in.Old = &first
	in.Now = at(200)
	return pod, in
}

// BenchmarkGenerate is the status of a running pod when nothing changed. The
// result itself costs: the container statuses slice, and per container a
// running state, a Started pointer, the "runtime://id" string and its
// resources (these containers ask for none: an empty ResourceRequirements,
// which upstream reports too); plus the
// conditions, pod IPs, host IPs and start time; plus the pod-level
// status.resources (upstream's InPlacePodLevelResourcesVerticalScaling):
// the ResourceRequirements, its Requests and Limits, and the working maps
// of the effective requests.
func BenchmarkGenerate(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			_, in := runningPod(b, n)
			b.ReportAllocs()
			for b.Loop() {
				s, err := Generate(in)
				if err != nil || s.Phase != v1.PodRunning {
					b.Fatal(err, s.Phase)
				}
			}
		})
	}
}

// TestGenerateAllocatesOnlyTheResult pins the allocation count of
// BenchmarkGenerate: 1 + 4 per container + 4 + 5 (see the benchmark's
// comment).
func TestGenerateAllocatesOnlyTheResult(t *testing.T) {
	for _, n := range []int{1, 10, 50} {
		_, in := runningPod(t, n)
		got := testing.AllocsPerRun(20, func() { _, _ = Generate(in) })
		// ContainerStatuses; per container Running, Started, ContainerID,
		// Resources; Conditions, PodIPs, HostIPs, StartTime; the pod-level
		// Resources, its Requests and Limits, the effective requests'
		// sum and the sidecars' and init containers' maps it uses.
		want := float64(1 + 4*n + 4 + 5)
		if got != want {
			t.Errorf("containers=%d: %v allocations, want %v (the result only)", n, got, want)
		}
	}
}

type nopSink struct{}

func (nopSink) GetPod(context.Context, *v1.Pod) (*v1.Pod, error) { return nil, ErrPodNotFound }
func (nopSink) UpdatePodStatus(context.Context, *v1.Pod, v1.PodStatus) (*v1.Pod, error) {
	return nil, nil
}
func (nopSink) DeletePod(context.Context, *v1.Pod) error { return nil }

// pushedManager returns a Manager holding n pods whose statuses were all
// pushed, and the pods as the agent's pod manager would return them.
func pushedManager(b *testing.B, n int, withPods bool) *Manager {
	pods := make(map[types.UID]*v1.Pod, n)
	opts := Options{Sink: nopSink{}, Clock: clocktesting.NewFakeClock(t0)}
	if withPods {
		opts.Pods = PodGetterFunc(func(uid types.UID) (*v1.Pod, bool) { p, ok := pods[uid]; return p, ok })
	}
	m, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	_, in := runningPod(b, 2)
	for i := range n {
		pod := in.Pod.DeepCopy()
		pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
		pod.ResourceVersion = "7"
		if err := m.Set(pod, *in.Old); err != nil {
			b.Fatal(err)
		}
		st, _ := m.GetPodStatus(pod.UID)
		pod.Status = st
		pods[pod.UID] = pod
	}
	m.mu.Lock()
	for _, e := range m.entries {
		e.pushed, e.queued = e.version, false
	}
	m.ready = nil
	m.mu.Unlock()
	return m
}

// BenchmarkManagerResync is the periodic resync when nothing changed:
// nothing may be queued. reconcile=none has no PodGetter; reconcile=steady
// has one whose pods did not change since the last resync (the usual case);
// reconcile=every-pod forgets what was checked before each resync, so every
// pod's status is merged and compared with its pod's (what the first resync
// after a change of every pod's resourceVersion costs).
func BenchmarkManagerResync(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"none", "steady", "every-pod"} {
			b.Run(fmt.Sprintf("pods=%d/reconcile=%s", n, mode), func(b *testing.B) {
				m := pushedManager(b, n, mode != "none")
				resync := func() {
					if mode == "every-pod" {
						m.mu.Lock()
						for _, e := range m.entries {
							e.checkedRV = ""
						}
						m.mu.Unlock()
					}
					m.resync()
					m.mu.Lock()
					defer m.mu.Unlock()
					if len(m.ready) != 0 {
						b.Fatalf("%d pods queued", len(m.ready))
					}
				}
				resync() // the first check of every pod
				b.ReportAllocs()
				for b.Loop() {
					resync()
				}
			})
		}
	}
}

var _ = metav1.Now
