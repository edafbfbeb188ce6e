package podsync_test

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func newPod(policy v1.RestartPolicy, inits []v1.Container, apps ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{RestartPolicy: policy, InitContainers: inits, Containers: apps},
	}
}

func ctr(name string) v1.Container {
	return v1.Container{Name: name, Image: "busybox:1", Command: []string{"sleep", "3600"}}
}

func sidecar(name string) v1.Container {
	c := ctr(name)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// sbx is a sandbox status.
func sbx(id string, attempt uint32, ready bool, ip string, hostNet bool) *runtimeapi.PodSandboxStatus {
	st := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		st = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	mode := runtimeapi.NamespaceMode_POD
	if hostNet {
		mode = runtimeapi.NamespaceMode_NODE
	}
	return &runtimeapi.PodSandboxStatus{
		Id: id, State: st,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1", Attempt: attempt},
		Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: &runtimeapi.NamespaceOption{Network: mode},
		}},
	}
}

// cst is a container status for spec container c (hash of c).
func cst(id string, c v1.Container, state runtimeapi.ContainerState, exit int32, restarts int) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id: id, State: state, ExitCode: exit,
		Metadata: &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restarts)},
		Labels:   cri.ContainerLabels("uid-1", "web", "default", c.Name),
		Annotations: map[string]string{
			cri.ContainerHashAnnotation:         containerconfig.FormatHash(containerconfig.HashContainer(&c)),
			cri.ContainerRestartCountAnnotation: strconv.Itoa(restarts),
		},
	}
}

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	created = runtimeapi.ContainerState_CONTAINER_CREATED
	unknown = runtimeapi.ContainerState_CONTAINER_UNKNOWN
)

func status(sandboxes []*runtimeapi.PodSandboxStatus, containers ...*runtimeapi.ContainerStatus) *cri.PodStatus {
	s := &cri.PodStatus{UID: "uid-1", Name: "web", Namespace: "default", Sandboxes: sandboxes, Containers: containers}
	if sb := s.Sandbox(); sb != nil {
		s.IPs = cri.SandboxIPs(sb)
	}
	return s
}

func ready() []*runtimeapi.PodSandboxStatus {
	return []*runtimeapi.PodSandboxStatus{sbx("sb1", 0, true, "10.88.0.2", false)}
}
