package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/server"
	nodestats "github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// NodeAPI is the node behind the kubelet API, what its handlers read and
// run: the desired pods with their statuses, exec, attach and port-forward
// through the runtime's streaming server, commands run to completion, the
// running pods, the containers' logs and the stats summary. Agent.API
// returns the agent's; a virtual-kubelet provider or a server of one's own
// serves it.
type NodeAPI interface {
	server.PodGetter
	server.Streamer
	server.CommandRunner
	server.RunningPodLister
	server.ContainerLogger
	server.StatsProvider
	server.Checkpointer
}

// nodeAPI is the agent's NodeAPI; it holds only the parts it reads.
type nodeAPI struct {
	rt     FullRuntime // its missing capabilities answer ErrUnimplemented
	pods   *syncloop.PodSet
	status *status.Manager
	clock  Clock
	// checkpoints is where container checkpoints are written
	// (RootDir/checkpoints, as upstream's).
	checkpoints string
	// summary answers Summary; nil, with summaryErr saying why, where the
	// machine cannot be measured.
	summary    *nodestats.Provider
	summaryErr error
}

var _ NodeAPI = (*nodeAPI)(nil)

// API returns the node behind the kubelet API: the pods, streams, logs and
// stats that the agent's own servers serve, for a server of the caller's
// (a virtual-kubelet provider's).
func (a *Agent) API() NodeAPI { return a.api }

// Pod implements server.PodGetter: the desired pod of that namespace and
// name (a static pod by its suffixed name), with its current status.
func (a *nodeAPI) Pod(namespace, name string) (*v1.Pod, bool) {
	p, ok := a.pods.GetPodByFullName(podspec.FullName(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}))
	if !ok {
		return nil, false
	}
	cp := p.DeepCopy()
	if st, ok := a.status.GetPodStatus(p.UID); ok {
		cp.Status = st
	}
	return cp, true
}

// runningContainer returns the ID of the pod's running container of that
// name, asking the runtime rather than the PLEG's cache, which may be a
// relist behind. Like upstream, only a running container is found.
func (a *nodeAPI) runningContainer(ctx context.Context, pod *v1.Pod, container string) (string, error) {
	rs, err := cri.GetPodStatus(ctx, a.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return "", err
	}
	for _, c := range rs.Containers { // newest first
		if c.GetMetadata().GetName() == container && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return c.GetId(), nil
		}
	}
	return "", fmt.Errorf("container not found (%q)", container)
}

// Exec implements server.Streamer with the runtime's CRI Exec.
func (a *nodeAPI) Exec(ctx context.Context, pod *v1.Pod, container string, cmd []string, opts server.StreamOptions) (*url.URL, error) {
	id, err := a.runningContainer(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	resp, err := a.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Tty: opts.TTY,
		Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.GetUrl())
}

// Attach implements server.Streamer with the runtime's CRI Attach.
func (a *nodeAPI) Attach(ctx context.Context, pod *v1.Pod, container string, opts server.StreamOptions) (*url.URL, error) {
	id, err := a.runningContainer(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	resp, err := a.rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Tty: opts.TTY,
		Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.GetUrl())
}

// PortForward implements server.Streamer with the runtime's CRI
// PortForward into the pod's newest ready sandbox.
func (a *nodeAPI) PortForward(ctx context.Context, pod *v1.Pod, ports []int32) (*url.URL, error) {
	rs, err := cri.GetPodStatus(ctx, a.rt, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, err
	}
	sb := rs.Sandbox()
	if sb == nil || sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("pod not found (%q)", pod.Name+"_"+pod.Namespace)
	}
	resp, err := a.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sb.GetId(), Port: ports})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.GetUrl())
}

// CheckpointContainer implements server.Checkpointer with the runtime's
// CRI CheckpointContainer, as upstream's kubelet: the pod's running
// container of that name is checkpointed to
// RootDir/checkpoints/checkpoint-POD_NAMESPACE-CONTAINER-TIME.tar (the time
// in RFC 3339), whose path is returned. A runtime without the call
// (cri.Checkpointer) fails with an error wrapping cri.ErrUnimplemented.
func (a *nodeAPI) CheckpointContainer(ctx context.Context, pod *v1.Pod, container string, timeoutSeconds int64) (string, error) {
	id, err := a.runningContainer(ctx, pod, container)
	if err != nil {
		return "", fmt.Errorf("container %v not found", container)
	}
	cp, ok := a.rt.(cri.Checkpointer)
	if !ok {
		return "", unsupported("checkpoint", "cri.Checkpointer")
	}
	if err := os.MkdirAll(a.checkpoints, 0o700); err != nil {
		return "", err
	}
	location := filepath.Join(a.checkpoints, fmt.Sprintf("checkpoint-%s_%s-%s-%s.tar", pod.Name, pod.Namespace, container, a.clock.Now().Format(time.RFC3339)))
	if err := cp.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: location, Timeout: timeoutSeconds}); err != nil {
		return "", err
	}
	return location, nil
}

// ErrCommandFailed is wrapped by RunInContainer's error when the command
// ran and exited non-zero; the output is returned all the same.
var ErrCommandFailed = errors.New("command failed")

// RunInContainer implements server.CommandRunner with the runtime's
// ExecSync: the command's standard output followed by its standard error.
func (a *nodeAPI) RunInContainer(ctx context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error) {
	id, err := a.runningContainer(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	resp, err := a.rt.ExecSync(ctx, id, cmd, 0)
	if err != nil {
		return nil, err
	}
	out := append(resp.GetStdout(), resp.GetStderr()...)
	if code := resp.GetExitCode(); code != 0 {
		return out, fmt.Errorf("%w: exit code %d", ErrCommandFailed, code)
	}
	return out, nil
}

// RunningPods implements server.RunningPodLister: the pods that have a
// ready sandbox or a running container in the runtime, by their labels,
// with their running containers' names and images.
func (a *nodeAPI) RunningPods(ctx context.Context) ([]v1.Pod, error) {
	sandboxes, err := a.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, err
	}
	containers, err := a.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, err
	}
	byUID := map[types.UID]*v1.Pod{}
	pod := func(labels map[string]string) *v1.Pod {
		uid := types.UID(labels[cri.PodUIDLabel])
		if uid == "" {
			return nil // not a kubelet's
		}
		p := byUID[uid]
		if p == nil {
			p = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: labels[cri.PodNameLabel], Namespace: labels[cri.PodNamespaceLabel]}}
			byUID[uid] = p
		}
		return p
	}
	for _, s := range sandboxes {
		pod(s.GetLabels())
	}
	for _, c := range containers {
		if p := pod(c.GetLabels()); p != nil {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.GetMetadata().GetName(), Image: c.GetImage().GetImage()})
		}
	}
	out := make([]v1.Pod, 0, len(byUID))
	for _, p := range byUID {
		sort.Slice(p.Spec.Containers, func(i, j int) bool { return p.Spec.Containers[i].Name < p.Spec.Containers[j].Name })
		out = append(out, *p)
	}
	sortPods(out)
	return out, nil
}
