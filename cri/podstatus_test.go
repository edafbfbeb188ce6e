package cri_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// statusRuntime is a PodStatusReader over fixed objects. Like some runtimes,
// it ignores list filters, so GetPodStatus must not trust them.
type statusRuntime struct {
	sandboxes  []*runtimeapi.PodSandboxStatus
	containers []*runtimeapi.ContainerStatus
	errs       map[string]error // per object ID, for its status call
	listErr    error
	calls      []string
}

var (
	_ cri.PodStatusReader = (*statusRuntime)(nil)
	_ cri.PodStatusReader = cri.RuntimeService(nil)
)

func (r *statusRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.calls = append(r.calls, "ListPodSandbox")
	var out []*runtimeapi.PodSandbox
	for _, s := range r.sandboxes {
		out = append(out, &runtimeapi.PodSandbox{Id: s.Id, Metadata: s.Metadata, State: s.State, CreatedAt: s.CreatedAt, Labels: s.Labels})
	}
	return out, r.listErr
}

func (r *statusRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.calls = append(r.calls, "ListContainers")
	var out []*runtimeapi.Container
	for _, c := range r.containers {
		out = append(out, &runtimeapi.Container{Id: c.Id, Metadata: c.Metadata, State: c.State, CreatedAt: c.CreatedAt, Labels: c.Labels})
	}
	return out, nil
}

func (r *statusRuntime) PodSandboxStatus(_ context.Context, id string, _ bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.calls = append(r.calls, "PodSandboxStatus "+id)
	if err := r.errs[id]; err != nil {
		return nil, err
	}
	for _, s := range r.sandboxes {
		if s.Id == id {
			return &runtimeapi.PodSandboxStatusResponse{Status: s}, nil
		}
	}
	return nil, fmt.Errorf("sandbox %s: %w", id, cri.ErrNotFound)
}

func (r *statusRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.calls = append(r.calls, "ContainerStatus "+id)
	if err := r.errs[id]; err != nil {
		return nil, err
	}
	for _, c := range r.containers {
		if c.Id == id {
			return &runtimeapi.ContainerStatusResponse{Status: c}, nil
		}
	}
	return nil, fmt.Errorf("container %s: %w", id, cri.ErrNotFound)
}

func sandboxStatus(uid types.UID, id string, created int64, st runtimeapi.PodSandboxState, ips ...string) *runtimeapi.PodSandboxStatus {
	s := &runtimeapi.PodSandboxStatus{
		Id:        id,
		Metadata:  &runtimeapi.PodSandboxMetadata{Uid: string(uid), Name: "web", Namespace: "prod"},
		State:     st,
		CreatedAt: created,
		Labels:    cri.PodLabels(uid, "web", "prod"),
	}
	if len(ips) > 0 {
		s.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: ips[0]}
		for _, ip := range ips[1:] {
			s.Network.AdditionalIps = append(s.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	return s
}

func containerStatus(uid types.UID, id, name string, created int64, attempt uint32, st runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{
		Id:        id,
		Metadata:  &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
		State:     st,
		CreatedAt: created,
		Labels:    cri.ContainerLabels(uid, "web", "prod", name),
	}
}

func idsOf[T interface{ GetId() string }](xs []T) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.GetId())
	}
	return out
}

func TestGetPodStatus(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name          string
		rt            *statusRuntime
		podName       string
		wantSandboxes []string
		wantContainer []string
		wantIPs       []string
		wantName      string
		wantErr       error
	}{
		{
			name: "newest first; other pods left out; IPs of the runtimeapi.PodSandboxState_SANDBOX_READY newest sandbox",
			rt: &statusRuntime{
				sandboxes: []*runtimeapi.PodSandboxStatus{
					sandboxStatus("u1", "old", 1, runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
					sandboxStatus("u1", "new", 5, runtimeapi.PodSandboxState_SANDBOX_READY, "10.0.0.5", "fd00::5"),
					sandboxStatus("u2", "other", 9, runtimeapi.PodSandboxState_SANDBOX_READY, "10.0.0.9"),
				},
				containers: []*runtimeapi.ContainerStatus{
					containerStatus("u1", "app-0", "app", 2, 0, runtimeapi.ContainerState_CONTAINER_EXITED),
					containerStatus("u1", "app-1", "app", 6, 1, runtimeapi.ContainerState_CONTAINER_RUNNING),
					containerStatus("u1", "side-0", "side", 6, 0, runtimeapi.ContainerState_CONTAINER_RUNNING),
					containerStatus("u2", "x", "app", 9, 0, runtimeapi.ContainerState_CONTAINER_RUNNING),
				},
			},
			podName:       "web",
			wantSandboxes: []string{"new", "old"},
			wantContainer: []string{"app-1", "side-0", "app-0"}, // same time: higher attempt, then ID
			wantIPs:       []string{"10.0.0.5", "fd00::5"},
			wantName:      "web",
		},
		{
			name:          "no IPs when the newest sandbox is not runtimeapi.PodSandboxState_SANDBOX_READY; name from the sandbox",
			rt:            &statusRuntime{sandboxes: []*runtimeapi.PodSandboxStatus{sandboxStatus("u1", "s", 1, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, "10.0.0.1")}},
			wantSandboxes: []string{"s"},
			wantName:      "web",
		},
		{
			name: "objects removed between list and status are skipped",
			rt: &statusRuntime{
				sandboxes:  []*runtimeapi.PodSandboxStatus{sandboxStatus("u1", "s", 1, runtimeapi.PodSandboxState_SANDBOX_READY)},
				containers: []*runtimeapi.ContainerStatus{containerStatus("u1", "c", "app", 2, 0, runtimeapi.ContainerState_CONTAINER_RUNNING), containerStatus("u1", "gone", "app", 1, 0, runtimeapi.ContainerState_CONTAINER_EXITED)},
				errs:       map[string]error{"gone": fmt.Errorf("rpc: %w", cri.ErrNotFound)},
			},
			wantSandboxes: []string{"s"},
			wantContainer: []string{"c"},
			wantName:      "web",
		},
		{
			name:     "a pod the runtime does not know is empty, not an error",
			rt:       &statusRuntime{},
			podName:  "web",
			wantName: "web",
		},
		{
			name: "any other status error fails the inspection",
			rt: &statusRuntime{
				sandboxes:  []*runtimeapi.PodSandboxStatus{sandboxStatus("u1", "s", 1, runtimeapi.PodSandboxState_SANDBOX_READY)},
				containers: []*runtimeapi.ContainerStatus{containerStatus("u1", "c", "app", 2, 0, runtimeapi.ContainerState_CONTAINER_RUNNING)},
				errs:       map[string]error{"c": boom},
			},
			wantErr: boom,
		},
		{
			name:    "a list error fails it",
			rt:      &statusRuntime{listErr: boom},
			wantErr: boom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := cri.GetPodStatus(t.Context(), tt.rt, "u1", tt.podName, "")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Contains(t, err.Error(), "u1")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, types.UID("u1"), st.UID)
			assert.Equal(t, tt.wantName, st.Name)
			assert.Equal(t, tt.wantSandboxes, idsOf(st.Sandboxes))
			assert.Equal(t, tt.wantContainer, idsOf(st.Containers))
			assert.Equal(t, tt.wantIPs, st.IPs)
			assert.True(t, st.Timestamp.IsZero(), "the caller stamps the status")
		})
	}
}

func TestInspectPodNilStatus(t *testing.T) {
	rt := nilStatusRuntime{}
	_, err := cri.InspectPod(t.Context(), rt, "u1", "", "", []string{"s"}, nil)
	assert.ErrorContains(t, err, "inspect pod u1: sandbox s: runtime returned no status")
}

type nilStatusRuntime struct{}

func (nilStatusRuntime) PodSandboxStatus(context.Context, string, bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return &runtimeapi.PodSandboxStatusResponse{}, nil
}

func (nilStatusRuntime) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{}, nil
}

func TestPodStatusAccessors(t *testing.T) {
	unlabelled := &runtimeapi.ContainerStatus{Id: "raw", Metadata: &runtimeapi.ContainerMetadata{Name: "init"}}
	st := &cri.PodStatus{
		Sandboxes: []*runtimeapi.PodSandboxStatus{sandboxStatus("u1", "s2", 2, runtimeapi.PodSandboxState_SANDBOX_READY), sandboxStatus("u1", "s1", 1, runtimeapi.PodSandboxState_SANDBOX_NOTREADY)},
		Containers: []*runtimeapi.ContainerStatus{
			containerStatus("u1", "app-1", "app", 3, 1, runtimeapi.ContainerState_CONTAINER_RUNNING),
			containerStatus("u1", "side-0", "side", 2, 0, runtimeapi.ContainerState_CONTAINER_RUNNING),
			containerStatus("u1", "app-0", "app", 1, 0, runtimeapi.ContainerState_CONTAINER_EXITED),
			unlabelled,
		},
	}
	assert.Equal(t, "s2", st.Sandbox().GetId())
	assert.Equal(t, "app-1", st.ContainerByName("app").GetId())
	assert.Equal(t, []string{"app-1", "app-0"}, idsOf(st.ContainersByName("app")))
	assert.Equal(t, "side-0", st.ContainerByID("side-0").GetId())
	assert.Nil(t, st.ContainerByName("nope"))
	assert.Nil(t, st.ContainerByID("nope"))
	assert.Equal(t, "raw", st.ContainerByName("init").GetId(), "the metadata name stands in for a missing label")

	var none *cri.PodStatus
	assert.Nil(t, none.Sandbox())
	assert.Nil(t, none.ContainerByName("app"))
	assert.Nil(t, none.ContainersByName("app"))
	assert.Nil(t, none.ContainerByID("x"))
	assert.Nil(t, (&cri.PodStatus{}).Sandbox())
}

func TestPodStatusFromEvent(t *testing.T) {
	ts := time.Unix(100, 42)
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        "app-1",
		ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		CreatedAt:          ts.UnixNano(),
		PodSandboxStatus:   sandboxStatus("u1", "s", 1, runtimeapi.PodSandboxState_SANDBOX_READY, "10.0.0.1"),
		ContainersStatuses: []*runtimeapi.ContainerStatus{
			containerStatus("u1", "app-0", "app", 1, 0, runtimeapi.ContainerState_CONTAINER_EXITED),
			containerStatus("u1", "app-1", "app", 2, 1, runtimeapi.ContainerState_CONTAINER_RUNNING),
		},
	}
	st, err := cri.PodStatusFromEvent(ev)
	require.NoError(t, err)
	assert.Equal(t, types.UID("u1"), st.UID)
	assert.Equal(t, "web", st.Name)
	assert.Equal(t, "prod", st.Namespace)
	assert.Equal(t, []string{"10.0.0.1"}, st.IPs)
	assert.Equal(t, []string{"s"}, idsOf(st.Sandboxes))
	assert.Equal(t, []string{"app-1", "app-0"}, idsOf(st.Containers))
	assert.Equal(t, []string{"app-0", "app-1"}, idsOf(ev.ContainersStatuses), "the event is not modified")
	assert.True(t, ts.Equal(st.Timestamp))

	_, err = cri.PodStatusFromEvent(&runtimeapi.ContainerEventResponse{ContainerId: "c"})
	assert.ErrorContains(t, err, "container event for c: no sandbox status")
}
