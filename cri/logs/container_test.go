package logs_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/logs"
)

func TestContainerForLogs(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	terminated := func(id string) *v1.ContainerStateTerminated {
		return &v1.ContainerStateTerminated{ContainerID: id}
	}
	for _, tc := range []struct {
		name     string
		status   v1.ContainerStatus
		init     bool
		previous bool
		want     string
		err      string
	}{
		{name: "running", status: v1.ContainerStatus{ContainerID: "containerd://abc", State: running}, want: "abc"},
		{name: "running init container", init: true, status: v1.ContainerStatus{ContainerID: "containerd://abc", State: running}, want: "abc"},
		{name: "raw id", status: v1.ContainerStatus{ContainerID: "abc", State: running}, want: "abc"},
		{name: "terminated", status: v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("cri-o://t1")}}, want: "t1"},
		{name: "terminated, restart not started", status: v1.ContainerStatus{
			State:                v1.ContainerState{Terminated: terminated("")},
			LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://t0")}}, want: "t0"},
		{name: "terminated without an ID", status: v1.ContainerStatus{State: v1.ContainerState{Terminated: terminated("")}},
			err: `container "app" in pod "web" is terminated`},
		{name: "waiting after a run", status: v1.ContainerStatus{
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://t0")}}, want: "t0"},
		{name: "waiting after a run without an ID", status: v1.ContainerStatus{
			State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: v1.ContainerState{Terminated: terminated("")}},
			err: `container "app" in pod "web" is terminated`},
		{name: "previous", previous: true, status: v1.ContainerStatus{ContainerID: "containerd://abc", State: running,
			LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://t0")}}, want: "t0"},
		{name: "no previous", previous: true, status: v1.ContainerStatus{ContainerID: "containerd://abc", State: running},
			err: `previous terminated container "app" in pod "web" not found`},
		{name: "image pull", status: v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull"}}},
			err: `container "app" in pod "web" is waiting to start: image can't be pulled`},
		{name: "image pull backoff", status: v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
			err: `container "app" in pod "web" is waiting to start: trying and failing to pull image`},
		{name: "creating", status: v1.ContainerStatus{State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
			err: `container "app" in pod "web" is waiting to start: ContainerCreating`},
		{name: "no state", status: v1.ContainerStatus{},
			err: `container "app" in pod "web" is waiting to start - no logs yet`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.status.Name = "app"
			st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "other", State: running, ContainerID: "containerd://other"}}}
			if tc.init {
				st.InitContainerStatuses = []v1.ContainerStatus{tc.status}
			} else {
				st.EphemeralContainerStatuses = []v1.ContainerStatus{{Name: "app", State: running, ContainerID: "containerd://ephemeral"}}
				st.ContainerStatuses = append(st.ContainerStatuses, tc.status)
			}
			id, err := logs.ContainerForLogs("web", st, "app", tc.previous)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				assert.ErrorIs(t, err, logs.ErrNoLogs)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, id)
		})
	}
	_, err := logs.ContainerForLogs("web", &v1.PodStatus{}, "app", false)
	require.EqualError(t, err, `container "app" in pod "web" is not available`)
	assert.ErrorIs(t, err, logs.ErrNoLogs)
	_, err = logs.ContainerForLogs("web", nil, "app", false)
	assert.ErrorIs(t, err, logs.ErrNoLogs)
	id, err := logs.ContainerForLogs("web", &v1.PodStatus{EphemeralContainerStatuses: []v1.ContainerStatus{
		{Name: "debug", State: running, ContainerID: "containerd://eph"}}}, "debug", false)
	require.NoError(t, err)
	assert.Equal(t, "eph", id)
}

func TestReadContainerLogs(t *testing.T) {
	e := newEnv(t, fake.Rule{Name: "talker", Behavior: fake.Behavior{Stdout: []string{"hello", "world"}, Stderr: []string{"oops"}}})
	id, _ := e.start("talker")
	var stdout, stderr bytes.Buffer
	require.NoError(t, logs.ReadContainerLogs(t.Context(), e.rt, id, nil, &stdout, &stderr))
	assert.Equal(t, "hello\nworld\n", stdout.String())
	assert.Equal(t, "oops\n", stderr.String())

	err := logs.ReadContainerLogs(t.Context(), e.rt, "nope", nil, &stdout, &stderr)
	require.ErrorIs(t, err, cri.ErrNotFound)
	assert.ErrorContains(t, err, "unable to retrieve container logs for nope")
}
