package kubeletkit_test

import (
	"context"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// An edge agent's first lines: an agent on the embedded fake runtime, given
// a pod of the author's own through Options.Cluster.Updates (the door an
// API server's pods take), reports it Running.
func Example() {
	root, _ := os.MkdirTemp("", "kubeletkit-example")
	defer os.RemoveAll(root)
	pods := make(chan syncloop.PodUpdate, 1)
	a, err := agent.New(agent.Options{
		NodeName: "edge-1",
		RootDir:  root,
		Cluster:  agent.ClusterOptions{Updates: pods},
		Timings:  agent.Timings{RelistPeriod: 100 * time.Millisecond},
		// The embedded fake runtime's filesystems are this machine's real
		// disk: on one nearly full, upstream's default thresholds (such as
		// imagefs.available<15%) would refuse the pod with DiskPressure.
		// The example turns eviction off so that its output does not depend
		// on the disk; an agent on a real node keeps it.
		Eviction: agent.EvictionOptions{Disabled: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sensor", Namespace: "default", UID: "sensor-1"},
		Spec: v1.PodSpec{NodeName: "edge-1", Containers: []v1.Container{
			{Name: "read", Image: "busybox", Command: []string{"sleep", "3600"}},
		}},
	}
	validation.DefaultPod(pod) // the API server's defaults, which a pod of one's own lacks
	pods <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: []*v1.Pod{pod}}

	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st := a.PodStatuses(); len(st) == 1 && st[0].Status.Phase == v1.PodRunning {
			fmt.Println(st[0].Namespace, st[0].Name, st[0].Status.Phase)
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	// Output: default sensor Running
}
