package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kubeletkit/kubeletkit/agent"
	v1 "k8s.io/api/core/v1"
)

// runOnce runs the agent a with run until every pod has started (or
// ended, or was refused), prints the pods as a JSON v1.PodList, and stops
// the agent.
func runOnce(ctx context.Context, a *agent.Agent, run func(context.Context) error, timeout time.Duration, stdout io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var pods []v1.Pod
	var waitErr error
wait:
	for {
		select {
		case err := <-done:
			return fmt.Errorf("agent stopped: %v", err)
		case <-deadline.C:
			waitErr = fmt.Errorf("runonce: not every pod started within %s", timeout)
			pods = a.PodStatuses()
			break wait
		case <-tick.C:
			pods = a.PodStatuses()
			if len(pods) > 0 && allStarted(pods) {
				break wait
			}
		}
	}
	cancel()
	err := <-done
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if encErr := enc.Encode(&v1.PodList{Items: pods}); encErr != nil {
		return encErr
	}
	return errors.Join(waitErr, err)
}

// allStarted reports whether every pod is Running, Succeeded or Failed.
func allStarted(pods []v1.Pod) bool {
	for _, p := range pods {
		switch p.Status.Phase {
		case v1.PodRunning, v1.PodSucceeded, v1.PodFailed:
		default:
			return false
		}
	}
	return true
}
