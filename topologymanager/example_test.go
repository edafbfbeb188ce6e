package topologymanager_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/topologymanager"
	"github.com/kubeletkit/kubeletkit/topologymanager/topologymanagertest"
)

// A single-numa-node manager on a two-NUMA machine, with a CPU hint
// provider whose CPUs are free on either node and a device provider whose
// GPU is on node 1.
func Example() {
	tm, err := topologymanager.New(topologymanager.Options{
		Policy:    topologymanager.PolicySingleNumaNode,
		NUMANodes: []int{0, 1},
	})
	if err != nil {
		panic(err)
	}
	both := topologymanager.NewMask(0, 1)
	cpus := &topologymanagertest.Provider{Name: "cpu", Store: tm,
		ContainerHintsFunc: func(*v1.Pod, *v1.Container) map[string][]topologymanager.Hint {
			return map[string][]topologymanager.Hint{"cpu": {
				{NUMANodes: topologymanager.NewMask(0), Preferred: true},
				{NUMANodes: topologymanager.NewMask(1), Preferred: true},
				{NUMANodes: both},
			}}
		}}
	gpus := &topologymanagertest.Provider{Name: "gpu", Store: tm,
		ContainerHintsFunc: func(*v1.Pod, *v1.Container) map[string][]topologymanager.Hint {
			return map[string][]topologymanager.Hint{"nvidia.com/gpu": {{NUMANodes: topologymanager.NewMask(1), Preferred: true}}}
		}}
	tm.AddHintProvider(cpus)
	tm.AddHintProvider(gpus)

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
	}
	ok, reason, msg := tm.Admit(pod, nil)
	fmt.Printf("admitted: %v %q %q\n", ok, reason, msg)
	fmt.Println("affinity:", tm.Affinity(pod.UID, "main"))
	for _, c := range cpus.Calls() {
		fmt.Println(c)
	}

	// The pure decision, without a Manager: hints that only meet across
	// both nodes are refused by single-numa-node, taken by best-effort.
	hints := []map[string][]topologymanager.Hint{
		{"cpu": {{NUMANodes: topologymanager.NewMask(0), Preferred: true}}},
		{"nvidia.com/gpu": {{NUMANodes: topologymanager.NewMask(1), Preferred: true}}},
	}
	for _, policy := range []string{topologymanager.PolicySingleNumaNode, topologymanager.PolicyBestEffort} {
		best, admit := topologymanager.Merge(policy, topologymanager.MergeOptions{}, []int{0, 1}, hints)
		fmt.Printf("%s: %v, admit %v\n", policy, best, admit)
	}
	// Output:
	// admitted: true "" ""
	// affinity: {1} preferred
	// cpu ContainerHints uid-1/main
	// cpu Allocate uid-1/main {1} preferred
	// single-numa-node: any not preferred, admit false
	// best-effort: {0,1} not preferred, admit true
}
