package fake_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestFaults(t *testing.T) {
	errBoom := errors.New("boom")
	cases := []struct {
		name  string
		fault fake.Fault
		calls []error // the outcome of successive calls
	}{
		{"error on every call", fake.Fault{Err: errBoom}, []error{errBoom, errBoom, errBoom}},
		{"error on the next two calls", fake.Fault{Err: errBoom, Times: 2}, []error{errBoom, errBoom, nil}},
		{"a sentinel error", fake.Fault{Err: fmt.Errorf("socket gone: %w", cri.ErrUnavailable), Times: 1}, []error{cri.ErrUnavailable, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{})
			e.rt.InjectFault(fake.Version, tc.fault)
			for i, want := range tc.calls {
				_, err := e.rt.Version(t.Context(), "v1")
				if want == nil {
					require.NoError(t, err, "call %d", i)
				} else {
					require.ErrorIs(t, err, want, "call %d", i)
					assert.ErrorContains(t, err, "Version")
				}
			}
			_, err := e.rt.Status(t.Context(), false)
			require.NoError(t, err, "other methods are not affected")
			assert.Len(t, e.rt.CallsOf(fake.Version), len(tc.calls), "faulty calls are recorded too")
		})
	}

	t.Run("latency on the clock", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		e.rt.InjectFault(fake.ListContainers, fake.Fault{Latency: 5 * time.Second, Times: 1})
		done := async(func() error {
			_, err := e.rt.ListContainers(t.Context(), nil)
			return err
		})
		waitUntil(t, "the call waits on the clock", e.clk.HasWaiters)
		e.clk.Step(4 * time.Second)
		pending(t, done)
		e.clk.Step(time.Second)
		require.NoError(t, receive(t, done))
		_, err := e.rt.ListContainers(t.Context(), nil)
		require.NoError(t, err, "Times 1: the next call is instant")
	})

	t.Run("latency then error", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		e.rt.InjectFault(fake.PullImage, fake.Fault{Latency: time.Second, Err: errBoom})
		done := async(func() error {
			_, err := e.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil)
			return err
		})
		waitUntil(t, "the call waits on the clock", e.clk.HasWaiters)
		e.clk.Step(time.Second)
		require.ErrorIs(t, receive(t, done), errBoom)
	})

	t.Run("hang until the caller gives up", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		e.rt.InjectFault(fake.ContainerStatus, fake.Fault{Hang: true})
		ctx, cancel := context.WithCancel(t.Context())
		done := async(func() error {
			_, err := e.rt.ContainerStatus(ctx, "x", false)
			return err
		})
		waitUntil(t, "the call is made", func() bool { return len(e.rt.CallsOf(fake.ContainerStatus)) == 1 })
		e.clk.Step(time.Hour)
		pending(t, done)
		cancel()
		err := receive(t, done)
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "hang")
	})

	t.Run("ClearFault", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		e.rt.InjectFault(fake.Version, fake.Fault{Err: errBoom})
		e.rt.InjectFault(fake.Status, fake.Fault{Err: errBoom})
		e.rt.ClearFault(fake.Version)
		_, err := e.rt.Version(t.Context(), "v1")
		require.NoError(t, err)
		_, err = e.rt.Status(t.Context(), false)
		require.ErrorIs(t, err, errBoom)
		e.rt.ClearFault()
		_, err = e.rt.Status(t.Context(), false)
		require.NoError(t, err)
	})
}

func TestCallRecording(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	sb, cfg := e.runPod("web")
	e.clk.Step(time.Second)
	id := e.create(sb, cfg, containerConfig("app", "busybox", "sleep", "1"))
	require.NoError(t, e.rt.StartContainer(ctx, id))
	_, err := e.rt.ExecSync(ctx, id, []string{"true"}, 1500*time.Millisecond)
	require.NoError(t, err)
	require.NoError(t, e.rt.StopContainer(ctx, id, 10))

	calls := e.rt.Calls()
	var methods []fake.Method
	for _, c := range calls {
		methods = append(methods, c.Method)
	}
	assert.Equal(t, []fake.Method{fake.RunPodSandbox, fake.CreateContainer, fake.StartContainer, fake.ExecSync, fake.StopContainer}, methods)
	assert.Equal(t, t0, calls[0].Time)
	assert.Equal(t, t0.Add(time.Second), calls[1].Time)

	run := calls[0].Request.(*runtimeapi.RunPodSandboxRequest)
	assert.True(t, proto.Equal(cfg, run.Config))
	create := calls[1].Request.(*runtimeapi.CreateContainerRequest)
	assert.Equal(t, sb, create.PodSandboxId)
	assert.Equal(t, "app", create.Config.Metadata.Name)
	exec := calls[3].Request.(*runtimeapi.ExecSyncRequest)
	assert.Equal(t, []string{"true"}, exec.Cmd)
	assert.EqualValues(t, 2, exec.Timeout, "seconds, rounded up")
	stop := e.rt.CallsOf(fake.StopContainer)
	require.Len(t, stop, 1)
	assert.True(t, proto.Equal(&runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}, stop[0].Request))

	// Requests are copies both ways.
	cfg.Metadata.Name = "changed"
	run.Config.Labels["app"] = "changed"
	again := e.rt.CallsOf(fake.RunPodSandbox)[0].Request.(*runtimeapi.RunPodSandboxRequest)
	assert.Equal(t, "web", again.Config.Metadata.Name)
	assert.Equal(t, "web", again.Config.Labels["app"])
	assert.Equal(t, "web", e.sandboxStatus(sb).Metadata.Name, "the runtime's state is its own")

	e.rt.ResetCalls()
	assert.Empty(t, e.rt.Calls())
	assert.Empty(t, e.rt.CallsOf(fake.RunPodSandbox))
}

func TestCallHistoryBound(t *testing.T) {
	e := newEnv(t, fake.Options{CallHistory: 10})
	for range 25 {
		_, err := e.rt.Version(t.Context(), "v1")
		require.NoError(t, err)
	}
	n := len(e.rt.Calls())
	assert.LessOrEqual(t, n, 10)
	assert.GreaterOrEqual(t, n, 5)

	off := newEnv(t, fake.Options{CallHistory: -1})
	_, err := off.rt.Version(t.Context(), "v1")
	require.NoError(t, err)
	assert.Empty(t, off.rt.Calls())
}

func TestReturnedMessagesAreCopies(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	id := e.run("app")
	st := e.status(id)
	st.Labels["container"] = "changed"
	st.Metadata.Name = "changed"
	imgs, err := e.rt.ListImages(ctx, nil)
	require.NoError(t, err)
	imgs[0].RepoTags[0] = "changed"

	st = e.status(id)
	assert.Equal(t, "app", st.Labels["container"])
	assert.Equal(t, "app", st.Metadata.Name)
	imgs, err = e.rt.ListImages(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "docker.io/library/busybox:latest", imgs[0].RepoTags[0])
}

// List entries are shared between lists while their object is unchanged,
// and the runtime never changes an entry it returned: a change of state
// makes a new one.
func TestListEntriesAreSharedAndNeverChanged(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	id := e.run("app")
	first, err := e.rt.ListContainers(ctx, nil)
	require.NoError(t, err)
	again, err := e.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.Len(t, again, 1)
	assert.Same(t, first[0], again[0])
	sbs, err := e.rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	sbsAgain, err := e.rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	assert.Same(t, sbs[0], sbsAgain[0])

	require.NoError(t, e.rt.StopContainer(ctx, id, 0))
	require.NoError(t, e.rt.StopPodSandbox(ctx, sbs[0].Id))
	after, err := e.rt.ListContainers(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, first[0].State, "a returned entry never changes")
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, after[0].State)
	sbsAfter, err := e.rt.ListPodSandbox(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sbs[0].State, "a returned entry never changes")
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, sbsAfter[0].State)
}

// overriding replaces one method of the fake by embedding it.
type overriding struct {
	*fake.Runtime
}

func (o overriding) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "mine", RuntimeApiVersion: "v1"}, nil
}

func TestOverrideByEmbedding(t *testing.T) {
	e := newEnv(t, fake.Options{})
	var rt cri.RuntimeService = overriding{e.rt}
	v, err := rt.Version(t.Context(), "v1")
	require.NoError(t, err)
	assert.Equal(t, "mine", v.RuntimeName)
	_, err = rt.RunPodSandbox(t.Context(), podConfig("web"), "")
	require.NoError(t, err, "the other methods are the fake's")
	assert.Len(t, e.rt.CallsOf(fake.RunPodSandbox), 1)
	assert.Empty(t, e.rt.CallsOf(fake.Version))
}
