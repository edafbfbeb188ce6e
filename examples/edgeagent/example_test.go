package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// The agent's own two ends, without the agent: the pod source reads a pod
// from a directory, and the status sink, which has never seen it, writes
// the status the agent would hand it.
func Example() {
	dir, err := os.MkdirTemp("", "edgeagent")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "web.json"), []byte(webPod), 0o600); err != nil {
		panic(err)
	}
	pods := readPods(dir, slog.New(slog.DiscardHandler))
	fmt.Println(pods[0].Name, pods[0].UID)

	sink := fileSink{dir: dir}
	pod := pods[0].DeepCopy()
	pod.Namespace = "default"
	_, err = sink.GetPod(context.Background(), pod)
	fmt.Println(err)
	if _, err := sink.UpdatePodStatus(context.Background(), pod, v1.PodStatus{Phase: v1.PodRunning}); err != nil {
		panic(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "default_web.json"))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(data))
	// Output:
	// web 0f6a1e2c-web
	// pod default/web: pod not found
	// {
	//   "phase": "Running"
	// }
}
