package status

import (
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"io/fs"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri"
)

// t0 is the time every test starts at.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func ctr(name string) v1.Container { return v1.Container{Name: name, Image: name + ":v1"} }

func sidecar(name string) v1.Container {
	c := ctr(name)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func withProbe(c v1.Container, readiness, startup bool) v1.Container {
	p := &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{}}}
	if readiness {
		c.ReadinessProbe = p
	}
	if startup {
		c.StartupProbe = p
	}
	return c
}

func mkPod(policy v1.RestartPolicy, init []v1.Container, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web", Namespace: "ns", Generation: 1},
		Spec:       v1.PodSpec{RestartPolicy: policy, InitContainers: init, Containers: containers},
	}
}

// rt builds a runtime view with one ready sandbox created at t0 and the given
// containers (which the test lists newest first).
func rt(containers ...*runtimeapi.ContainerStatus) *cri.PodStatus {
	return &cri.PodStatus{
		UID: "uid-1", Name: "web", Namespace: "ns",
		IPs: []string{"10.0.0.5"},
		Sandboxes: []*runtimeapi.PodSandboxStatus{{
			Id: "sb1", State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: t0.UnixNano(),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "uid-1"},
			Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.5"},
		}},
		Containers: containers,
	}
}

func cs(name, id string, created int, restarts int, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(restarts)},
		State:     state,
		CreatedAt: at(created).UnixNano(),
		Image:     &runtimeapi.ImageSpec{Image: name + ":v1"},
		ImageRef:  "sha256:" + name,
		Labels:    map[string]string{cri.ContainerNameLabel: name, cri.PodUIDLabel: "uid-1"},
		Annotations: map[string]string{
			cri.ContainerRestartCountAnnotation: strconv.Itoa(restarts),
		},
	}
}

func running(name, id string, created, restarts int) *runtimeapi.ContainerStatus {
	c := cs(name, id, created, restarts, runtimeapi.ContainerState_CONTAINER_RUNNING)
	c.StartedAt = at(created + 1).UnixNano()
	return c
}

func exited(name, id string, created, restarts int, code int32, reason string) *runtimeapi.ContainerStatus {
	c := cs(name, id, created, restarts, runtimeapi.ContainerState_CONTAINER_EXITED)
	c.StartedAt = at(created + 1).UnixNano()
	c.FinishedAt = at(created + 2).UnixNano()
	c.ExitCode = code
	c.Reason = reason
	return c
}

func waitingReasons(m map[string]v1.ContainerStateWaiting) WaitingReasons {
	return WaitingReasonsFunc(func(_ types.UID, name string) (v1.ContainerStateWaiting, bool) {
		w, ok := m[name]
		return w, ok
	})
}

// fakeMessages is a MessageReader over maps of path to content.
type fakeMessages struct {
	files map[string]string
	logs  map[string]string
	err   error
}

func (f fakeMessages) ReadTerminationMessage(path string, max int) ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	s, ok := f.files[path]
	if !ok {
		return nil, errNotExist
	}
	if len(s) > max {
		s = s[len(s)-max:]
	}
	return []byte(s), nil
}

func (f fakeMessages) ReadLogTail(path string, lines, max int) ([]byte, error) {
	s, ok := f.logs[path]
	if !ok {
		return nil, errNotExist
	}
	return DecodeLogTail([]byte(s), lines, max), nil
}

func cond(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	return findCondition(s.Conditions, t)
}

func status(s v1.PodStatus, name string) *v1.ContainerStatus {
	if c := findStatus(s.ContainerStatuses, name); c != nil {
		return c
	}
	return findStatus(s.InitContainerStatuses, name)
}

var errNotExist = fs.ErrNotExist

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

func assertTime(t *testing.T, want time.Time, got metav1.Time) {
	t.Helper()
	if !want.Equal(got.Time) {
		t.Errorf("time: want %s, got %s", want, got.Time)
	}
}
