package cpumanager_test

import (
	"fmt"
	"io"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cpumanager"
)

// A static CPU manager on a fake machine of 4 cores with 2 threads each:
// a Guaranteed pod asking for 2 CPUs gets a whole core; the rest is the
// shared pool.
func Example() {
	machine, _ := cpumanager.NewTopology(1, 4, 2, 1)
	m, err := cpumanager.New(cpumanager.Options{Policy: cpumanager.PolicyStatic, Topology: machine,
		ReservedMilliCPU: 1000, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	two := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "uid-db"}, Spec: v1.PodSpec{Containers: []v1.Container{
		{Name: "db", Resources: v1.ResourceRequirements{Requests: two, Limits: two}},
	}}}
	ok, _, _ := m.Admit(pod, nil)
	fmt.Println("admitted:", ok)
	fmt.Println("db runs on:", m.ContainerCPUs(pod.UID, "db"))
	fmt.Println("shared pool:", m.DefaultCPUs())
	// Output:
	// admitted: true
	// db runs on: 1,5
	// shared pool: 0,2-4,6-7
}
