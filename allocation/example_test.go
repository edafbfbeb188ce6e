package allocation_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/allocation"
)

// printer is an EventRecorder that prints each event's reason.
type printer struct{}

func (printer) Eventf(_ runtime.Object, eventtype, reason, _ string, _ ...any) {
	fmt.Println("event:", eventtype, reason)
}

// A node of 4 CPUs runs two pods. One asks for more CPU than is left: the
// resize waits (Deferred) until the other pod leaves, then is allocated;
// its PodResizeInProgress goes once the runtime runs the new resources.
func Example() {
	pod := func(name, cpu string) *v1.Pod {
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("256Mi")}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Generation: 1},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}}}
	}
	pods := []*v1.Pod{pod("web", "1"), pod("batch", "2")}
	m, err := allocation.New(allocation.Options{
		Node: allocation.NodeAllocatableFunc(func() (v1.ResourceList, error) {
			return v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
				v1.ResourcePods: resource.MustParse("110")}, nil
		}),
		Pods: allocation.PodsFuncs{
			Others: func(p *v1.Pod) (out []*v1.Pod) {
				for _, q := range pods {
					if q.UID != p.UID {
						out = append(out, q)
					}
				}
				return out
			},
			ByUID: func(uid types.UID) (*v1.Pod, bool) {
				for _, q := range pods {
					if q.UID == uid {
						return q, true
					}
				}
				return nil, false
			},
		},
		Clock:    clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Recorder: printer{},
	})
	if err != nil {
		panic(err)
	}
	if err := m.Load(); err != nil { // no checkpoint: nothing to read
		panic(err)
	}
	for _, p := range pods { // admitted
		m.SetAllocated(p)
	}

	// The API asks web for 3 CPUs: 3 + 2 > 4.
	web := pods[0].DeepCopy()
	web.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("3")
	web.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("3")
	web.Generation++
	pods[0] = web
	fmt.Println(m.AdmitResize(web))
	m.HandleResize(web)
	for _, c := range m.Conditions(web.UID) {
		fmt.Println(c.Type, c.Reason)
	}
	allocated, asked := m.AllocatedPod(web)
	fmt.Println("runs with", allocated.Spec.Containers[0].Resources.Requests.Cpu(), "resize asked:", asked)

	// batch leaves: the deferred resize is retried, and taken.
	pods = pods[:1]
	m.RemovePod("batch")
	for _, p := range m.RetryPendingResizes() {
		fmt.Println("sync", p.Name)
	}
	allocated, _ = m.AllocatedPod(web)
	fmt.Println("runs with", allocated.Spec.Containers[0].Resources.Requests.Cpu())
	for _, c := range m.Conditions(web.UID) {
		fmt.Println(c.Type, "generation", c.ObservedGeneration)
	}

	// The runtime applied it.
	m.CheckResizeInProgress(allocated, allocation.ActuationFunc(func(*v1.Container) bool { return true }))
	fmt.Println("conditions left:", len(m.Conditions(web.UID)))
	// Output:
	// Defer: Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000
	// event: Warning ResizeDeferred
	// PodResizePending Deferred
	// runs with 1 resize asked: true
	// event: Normal ResizeStarted
	// sync web
	// runs with 3
	// PodResizeInProgress generation 2
	// event: Normal ResizeCompleted
	// conditions left: 0
}
