package agenttest

import (
	"context"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// Hook is a lifecycle hook's exec command that a container received.
type Hook struct {
	// Handler is "PostStart" or "PreStop".
	Handler string
	// Command is the argv the runtime was asked to run.
	Command []string
}

// PodReady reports whether the pod's Ready condition is True, as the status
// the node last wrote says; false for a pod that is not there.
func (n *Node) PodReady(namespace, name string) bool {
	n.t.Helper()
	return IsReady(n.Pod(namespace, name))
}

// IsReady reports whether pod's Ready condition is True; false for nil.
func IsReady(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// PodEvents returns the events recorded so far about the pod of that
// namespace and name (any pod of that name, whatever its UID), oldest first.
func (n *Node) PodEvents(namespace, name string) []Event {
	want := "Pod " + key(namespace, name)
	var out []Event
	for _, e := range n.Events() {
		if e.Object == want {
			out = append(out, e)
		}
	}
	return out
}

// ExecCalls returns the commands that every container of that name in the
// pod of that namespace and name (any of its restarts, any pod of that
// name) received through ExecSync or a streaming Exec, oldest first: exec
// probes, exec hooks and kubectl exec. Only the calls the runtime still
// remembers count (fake.Options.CallHistory, 10,000 by default).
func (n *Node) ExecCalls(namespace, name, container string) [][]string {
	var out [][]string
	for _, c := range n.execs(namespace, name, container) {
		out = append(out, c.cmd)
	}
	return out
}

// Hooks returns the lifecycle hooks that every container of that name in
// the pod of that namespace and name received, oldest first: the exec
// calls (see ExecCalls) whose command is the postStart or preStop exec
// command of the container in the pod's spec as the node was given it. A
// probe with the same command as a hook counts as the hook, and a command
// both hooks share as PostStart. HTTP and sleep hooks run no command in the
// container and do not show.
func (n *Node) Hooks(namespace, name, container string) []Hook {
	var out []Hook
	for _, c := range n.execs(namespace, name, container) {
		pod := n.index.pod(c.uid)
		if pod == nil {
			continue
		}
		for _, ctr := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			if ctr.Name != container || ctr.Lifecycle == nil {
				continue
			}
			if h := ctr.Lifecycle.PostStart; h != nil && h.Exec != nil && slices.Equal(h.Exec.Command, c.cmd) {
				out = append(out, Hook{Handler: "PostStart", Command: c.cmd})
			} else if h := ctr.Lifecycle.PreStop; h != nil && h.Exec != nil && slices.Equal(h.Exec.Command, c.cmd) {
				out = append(out, Hook{Handler: "PreStop", Command: c.cmd})
			}
			break
		}
	}
	return out
}

// execCall is one exec a container received.
type execCall struct {
	uid types.UID
	cmd []string
}

func (n *Node) execs(namespace, name, container string) []execCall {
	var out []execCall
	for _, c := range n.rt.Calls() {
		var id string
		var cmd []string
		switch r := c.Request.(type) {
		case *runtimeapi.ExecSyncRequest:
			id, cmd = r.GetContainerId(), r.GetCmd()
		case *runtimeapi.ExecRequest:
			id, cmd = r.GetContainerId(), r.GetCmd()
		default:
			continue
		}
		ref, ok := n.index.container(id)
		if !ok || ref.namespace != namespace || ref.pod != name || ref.container != container {
			continue
		}
		out = append(out, execCall{uid: ref.uid, cmd: slices.Clone(cmd)})
	}
	return out
}

// containerRef names the pod and container a container ID belongs to.
type containerRef struct {
	uid                       types.UID
	namespace, pod, container string
}

// index remembers, for the test's lifetime, which pod and container each
// container ID the runtime created belongs to, and the last spec of each
// pod the node was given, so that exec calls can be told apart after the
// containers or pods are gone.
type index struct {
	mu         sync.Mutex
	containers map[string]containerRef
	pods       map[types.UID]*v1.Pod
}

func newIndex() *index {
	return &index{containers: map[string]containerRef{}, pods: map[types.UID]*v1.Pod{}}
}

// container returns the reference of a container ID, or of the one
// container whose ID starts with id (as the runtime resolves a short ID).
func (x *index) container(id string) (containerRef, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r, ok := x.containers[id]; ok {
		return r, true
	}
	var found []containerRef
	for full, r := range x.containers {
		if id != "" && strings.HasPrefix(full, id) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		return containerRef{}, false
	}
	return found[0], true
}

func (x *index) pod(uid types.UID) *v1.Pod {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.pods[uid]
}

// relay passes the pod updates of in to out until ctx ends or in is
// closed, keeping the pods it passes. The pods are the source's: they are
// read, never modified.
func (x *index) relay(ctx context.Context, in <-chan syncloop.PodUpdate, out chan<- syncloop.PodUpdate) {
	for {
		var u syncloop.PodUpdate
		select {
		case v, ok := <-in:
			if !ok {
				return
			}
			u = v
		case <-ctx.Done():
			return
		}
		x.mu.Lock()
		for _, p := range u.Pods {
			if p != nil && p.UID != "" {
				x.pods[p.UID] = p
			}
		}
		x.mu.Unlock()
		select {
		case out <- u:
		case <-ctx.Done():
			return
		}
	}
}

// indexedRuntime is the fake runtime as the agent sees it: every container
// it creates is put in the index.
type indexedRuntime struct {
	*fake.Runtime
	index *index
}

var _ agent.Runtime = indexedRuntime{}

// CreateContainer creates the container and indexes its ID.
func (r indexedRuntime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.Runtime.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	if err != nil {
		return id, err
	}
	l := config.GetLabels()
	ref := containerRef{uid: types.UID(l[cri.PodUIDLabel]), namespace: l[cri.PodNamespaceLabel], pod: l[cri.PodNameLabel],
		container: l[cri.ContainerNameLabel]}
	if md := sandboxConfig.GetMetadata(); ref.pod == "" && md != nil {
		ref.uid, ref.namespace, ref.pod = types.UID(md.GetUid()), md.GetNamespace(), md.GetName()
	}
	if ref.container == "" {
		ref.container = config.GetMetadata().GetName()
	}
	r.index.mu.Lock()
	r.index.containers[id] = ref
	r.index.mu.Unlock()
	return id, nil
}
