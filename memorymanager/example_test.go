package memorymanager_test

import (
	"fmt"
	"io"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/memorymanager"
)

// A static memory manager on a fake machine of two NUMA nodes of 4Gi each,
// 512Mi of each reserved for the system: a Guaranteed pod asking for 2Gi
// gets them on one node.
func Example() {
	const gi = 1 << 30
	reserve := func(node int32) kubeletconfig.MemoryReservation {
		return kubeletconfig.MemoryReservation{NumaNode: node, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi")}}
	}
	m, err := memorymanager.New(memorymanager.Options{
		Policy:         memorymanager.PolicyStatic,
		Machine:        memorymanager.FakeMachine(2, 4*gi),
		ReservedMemory: []kubeletconfig.MemoryReservation{reserve(0), reserve(1)},
		SystemReserved: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	two := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("2Gi")}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "uid-db"}, Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "db", Resources: v1.ResourceRequirements{Requests: two, Limits: two}},
	}}}
	ok, _, _ := m.Admit(pod, nil)
	fmt.Println("admitted:", ok)
	fmt.Println("cpuset_mems:", m.ContainerMemoryNodes(pod, &pod.Spec.Containers[0]))
	for _, id := range []int{0, 1} {
		t := m.MachineState()[id].MemoryMap[v1.ResourceMemory]
		fmt.Printf("node %d: allocatable %s, free %s\n", id, resource.NewQuantity(int64(t.Allocatable), resource.BinarySI), resource.NewQuantity(int64(t.Free), resource.BinarySI))
	}
	// Output:
	// admitted: true
	// cpuset_mems: 0
	// node 0: allocatable 3584Mi, free 1536Mi
	// node 1: allocatable 3584Mi, free 3584Mi
}
