package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

func main() {
	pods := flag.String("pods", "pods", "directory of the pods to run, one JSON v1.Pod per *.json file")
	statuses := flag.String("statuses", "statuses", "directory the pods' statuses are written to")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	root, err := os.MkdirTemp("", "edgeagent") // a fresh root for a fresh fake runtime
	if err == nil {
		err = run(ctx, *pods, *statuses, root, log)
		os.RemoveAll(root)
	}
	stop()
	if err != nil {
		log.Error("edgeagent", "err", err)
		os.Exit(1)
	}
}

// run runs the agent on the embedded fake runtime until ctx ends.
func run(ctx context.Context, pods, statuses, root string, log *slog.Logger) error {
	if err := os.MkdirAll(statuses, 0o750); err != nil {
		return err
	}
	rt := agent.NewFakeRuntime(nil, log)
	defer rt.Close()
	updates := make(chan syncloop.PodUpdate)
	a, err := agent.New(agent.Options{
		NodeName: "edge1", RootDir: root, Logger: log,
		Runtime: loggingRuntime{FullRuntime: rt, log: log},
		Sources: agent.SourceOptions{Custom: []agent.PodSource{{Name: "edge-dir", Updates: updates}}},
		Cluster: agent.ClusterOptions{StatusSink: fileSink{dir: statuses}},
		Node:    agent.NodeOptions{ResolvConf: agent.ResolvConfNone}, // the fake runtime's pods have no network
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { readEvery(ctx, pods, 2*time.Second, updates, log) })
	err = a.Run(ctx)
	cancel()
	wg.Wait()
	return err
}

// readEvery, the agent's own pod source, sends dir's pods as a SET every period.
func readEvery(ctx context.Context, dir string, period time.Duration, out chan<- syncloop.PodUpdate, log *slog.Logger) {
	for {
		select {
		case out <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: readPods(dir, log)}:
		case <-ctx.Done():
			return
		}
		select {
		case <-time.After(period):
		case <-ctx.Done():
			return
		}
	}
}

// readPods reads dir's *.json files as pods, logging those it cannot read.
func readPods(dir string, log *slog.Logger) []*v1.Pod {
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var pods []*v1.Pod
	for _, f := range files {
		p := &v1.Pod{}
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, p)
		}
		if err != nil {
			log.Warn("pod file ignored", "file", f, "err", err)
			continue
		}
		pods = append(pods, p)
	}
	return pods
}

// fileSink writes each pod's status to dir/<namespace>_<name>.json. It
// knows no pod beforehand (GetPod finds none): the agent hands it its own.
type fileSink struct{ dir string }

func (s fileSink) GetPod(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
}

func (s fileSink) UpdatePodStatus(_ context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	data, err := json.MarshalIndent(st, "", "  ")
	if err == nil {
		err = os.WriteFile(s.path(pod)+".tmp", data, 0o600)
	}
	if err == nil {
		err = os.Rename(s.path(pod)+".tmp", s.path(pod)) // readers never see half a file
	}
	return nil, err
}

// DeletePod is never called: the agent asks to delete no static pod.
func (fileSink) DeletePod(context.Context, *v1.Pod) error { return nil }

func (s fileSink) path(pod *v1.Pod) string {
	return filepath.Join(s.dir, pod.Namespace+"_"+pod.Name+".json")
}

// loggingRuntime logs the containers the agent creates: where an edge agent
// adapts its runtime, it wraps the methods it needs. It embeds a
// FullRuntime: an embedded agent.Runtime would hide exec, stats and events.
type loggingRuntime struct {
	agent.FullRuntime
	log *slog.Logger
}

func (r loggingRuntime) CreateContainer(ctx context.Context, sandbox string, cfg *runtimeapi.ContainerConfig, sb *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.FullRuntime.CreateContainer(ctx, sandbox, cfg, sb)
	r.log.Info("container created", "pod", sb.GetMetadata().GetName(), "container", cfg.GetMetadata().GetName(), "id", id, "err", err)
	return id, err
}
