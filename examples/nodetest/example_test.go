package nodetest_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// The decision of the rollback controller that rollback_test.go runs
// against a node: a pod whose container waits in CrashLoopBackOff is
// replaced. A Node itself needs a synctest bubble, which an Example cannot
// enter (it gets no *testing.T): TestRollbackReplacesCrashLoopingPod is the
// whole test, docs/testing-controllers.md its guide.
func Example() {
	pod := &v1.Pod{Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
		Name:  "web",
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
	}}}}
	fmt.Println("replace:", crashLooping(pod))
	pod.Status.ContainerStatuses[0].State = v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	fmt.Println("replace:", crashLooping(pod))
	// Output:
	// replace: true
	// replace: false
}
