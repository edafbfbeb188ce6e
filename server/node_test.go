package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/server"
)

// fakeNode is every node interface of the secure server over a fixed set
// of pods. It records the calls it gets; each method's answer can be
// replaced by setting its field.
type fakeNode struct {
	pods    map[string]*v1.Pod // by namespace/name
	running []v1.Pod

	logs    func(opts *v1.PodLogOptions, stdout, stderr io.Writer) error
	stream  func(kind string) (*url.URL, error)
	run     func(cmd []string) ([]byte, error)
	summary func(only bool) (*statsv1alpha1.Summary, error)
	runErr  error
	// checkpoint answers CheckpointContainer; nil: a path.
	checkpoint func(timeout int64) (string, error)

	mu    sync.Mutex
	calls []call
}

// call is one recorded call of a node interface.
type call struct {
	Method    string
	Pod       string // namespace/name
	Container string
	Cmd       []string
	Stream    server.StreamOptions
	Ports     []int32
	Logs      *v1.PodLogOptions
	Only      bool
	Timeout   int64
}

var (
	_ server.PodGetter        = (*fakeNode)(nil)
	_ server.ContainerLogger  = (*fakeNode)(nil)
	_ server.Streamer         = (*fakeNode)(nil)
	_ server.CommandRunner    = (*fakeNode)(nil)
	_ server.StatsProvider    = (*fakeNode)(nil)
	_ server.RunningPodLister = (*fakeNode)(nil)
)

func newFakeNode(pods ...*v1.Pod) *fakeNode {
	n := &fakeNode{pods: map[string]*v1.Pod{}}
	for _, p := range pods {
		n.pods[p.Namespace+"/"+p.Name] = p
	}
	return n
}

func (n *fakeNode) record(c call) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, c)
}

func (n *fakeNode) recorded() []call {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]call(nil), n.calls...)
}

func key(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func (n *fakeNode) Pod(namespace, name string) (*v1.Pod, bool) {
	p, ok := n.pods[namespace+"/"+name]
	return p, ok
}

func (n *fakeNode) ContainerLogs(_ context.Context, pod *v1.Pod, container string, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	n.record(call{Method: "ContainerLogs", Pod: key(pod), Container: container, Logs: opts})
	if n.logs != nil {
		return n.logs(opts, stdout, stderr)
	}
	fmt.Fprintf(stdout, "log of %s/%s\n", pod.Name, container)
	return nil
}

func (n *fakeNode) streamURL(kind string) (*url.URL, error) {
	if n.stream != nil {
		return n.stream(kind)
	}
	return &url.URL{Scheme: "http", Host: "127.0.0.1:1", Path: "/" + kind + "/token"}, nil
}

func (n *fakeNode) Exec(_ context.Context, pod *v1.Pod, container string, cmd []string, opts server.StreamOptions) (*url.URL, error) {
	n.record(call{Method: "Exec", Pod: key(pod), Container: container, Cmd: cmd, Stream: opts})
	return n.streamURL("exec")
}

func (n *fakeNode) Attach(_ context.Context, pod *v1.Pod, container string, opts server.StreamOptions) (*url.URL, error) {
	n.record(call{Method: "Attach", Pod: key(pod), Container: container, Stream: opts})
	return n.streamURL("attach")
}

func (n *fakeNode) PortForward(_ context.Context, pod *v1.Pod, ports []int32) (*url.URL, error) {
	n.record(call{Method: "PortForward", Pod: key(pod), Ports: ports})
	return n.streamURL("portforward")
}

func (n *fakeNode) RunInContainer(_ context.Context, pod *v1.Pod, container string, cmd []string) ([]byte, error) {
	n.record(call{Method: "RunInContainer", Pod: key(pod), Container: container, Cmd: cmd})
	if n.run != nil {
		return n.run(cmd)
	}
	return []byte("ran\n"), nil
}

func (n *fakeNode) CheckpointContainer(_ context.Context, pod *v1.Pod, container string, timeout int64) (string, error) {
	n.record(call{Method: "CheckpointContainer", Pod: key(pod), Container: container, Timeout: timeout})
	if n.checkpoint != nil {
		return n.checkpoint(timeout)
	}
	return "/var/lib/kubelet/checkpoints/checkpoint-web_default-app-2026-12-02T18:00:00Z.tar", nil
}

func (n *fakeNode) Summary(_ context.Context, only bool) (*statsv1alpha1.Summary, error) {
	n.record(call{Method: "Summary", Only: only})
	if n.summary != nil {
		return n.summary(only)
	}
	return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: "node1"}}, nil
}

func (n *fakeNode) RunningPods(context.Context) ([]v1.Pod, error) {
	n.record(call{Method: "RunningPods"})
	return n.running, n.runErr
}

// webPod is a pod with an init container and two containers.
func webPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: types.UID("uid-web")},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "app"}, {Name: "sidecar"}},
		},
	}
}

// mirrorPod is a static pod's mirror: its own UID, the static pod's in an
// annotation.
func mirrorPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-node1", UID: types.UID("uid-mirror"),
			Annotations: map[string]string{v1.MirrorPodAnnotationKey: "uid-static"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "etcd"}}},
	}
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
