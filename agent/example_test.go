package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
)

// An agent on the embedded fake runtime runs a static pod from a manifest
// directory.
func Example() {
	dir, _ := os.MkdirTemp("", "agent-example")
	defer os.RemoveAll(dir)
	manifests := filepath.Join(dir, "manifests")
	_ = os.Mkdir(manifests, 0o750)
	_ = os.WriteFile(filepath.Join(manifests, "hello.yaml"), []byte(`
apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  containers:
  - {name: hello, image: busybox, command: [sleep, "3600"]}
`), 0o600)

	a, err := agent.New(agent.Options{
		NodeName: "node1",
		RootDir:  filepath.Join(dir, "root"),
		Sources:  agent.SourceOptions{ManifestPath: manifests},
		Timings:  agent.Timings{RelistPeriod: 100 * time.Millisecond},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		pods := a.PodStatuses()
		if len(pods) == 1 && pods[0].Status.Phase == v1.PodRunning {
			fmt.Println(pods[0].Namespace, pods[0].Name, pods[0].Status.Phase)
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	// Output: default hello-node1 Running
}
