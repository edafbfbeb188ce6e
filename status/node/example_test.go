package node_test

import (
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/status/node"
)

// Build a node's status from what the providers said: here the runtime
// does not answer.
func ExampleBuildStatus() {
	st := node.BuildStatus(node.Input{
		Capacity: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse("2"),
			v1.ResourceMemory: resource.MustParse("4Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
		},
		Reserved:         v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi")},
		RuntimeVersion:   &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "2.1.0"},
		RuntimeStatusErr: errors.New("connection refused"),
		KubeletVersion:   "v1.37.0",
		Now:              time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	})
	mem := st.Allocatable[v1.ResourceMemory]
	fmt.Println("allocatable memory:", mem.String())
	fmt.Println("runtime:", st.NodeInfo.ContainerRuntimeVersion)
	for _, c := range st.Conditions {
		fmt.Printf("%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	// Output:
	// allocatable memory: 3584Mi
	// runtime: containerd://2.1.0
	// MemoryPressure=False KubeletHasSufficientMemory: kubelet has sufficient memory available
	// DiskPressure=False KubeletHasNoDiskPressure: kubelet has no disk pressure
	// PIDPressure=False KubeletHasSufficientPID: kubelet has sufficient PID available
	// Ready=False KubeletNotReady: container runtime is down: connection refused
}
