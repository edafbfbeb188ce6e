package fake_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// The fake served over a unix socket with cri.NewServer, as crictl and
// critest see it: the sentinels survive the round trip and events stream.
func TestServedOverGRPC(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{{Name: "job", Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 3, RunFor: time.Second}}}})
	srv, err := cri.NewServer(e.rt, e.rt, cri.ServerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	endpoint := "unix://" + filepath.Join(t.TempDir(), "fake.sock")
	served := async(func() error { return srv.ListenAndServe(ctx, endpoint) })
	defer func() {
		cancel()
		require.NoError(t, receive(t, served))
	}()

	var client *cri.Client
	waitUntil(t, "the server listens", func() bool {
		c, err := cri.Dial(ctx, endpoint, cri.DialOptions{ConnectTimeout: time.Second})
		client = c
		return err == nil
	})
	defer client.Close()

	v, err := client.Version(ctx, "v1")
	require.NoError(t, err)
	assert.Equal(t, "kubeletkit-fake", v.RuntimeName)

	_, err = client.ContainerStatus(ctx, "nope", false)
	require.ErrorIs(t, err, cri.ErrNotFound)

	evCtx, stopEvents := context.WithCancel(ctx)
	events := make(chan *runtimeapi.ContainerEventResponse, 16)
	streamDone := async(func() error {
		for ev, err := range client.GetContainerEvents(evCtx) {
			if err != nil {
				return err
			}
			events <- ev
		}
		return nil
	})
	waitUntil(t, "the stream is open", func() bool { return len(e.rt.CallsOf(fake.GetContainerEvents)) == 1 })

	cfg := podConfig("web")
	sb, err := client.RunPodSandbox(ctx, cfg, "")
	require.NoError(t, err)
	id, err := client.CreateContainer(ctx, sb, containerConfig("job", "busybox"), cfg)
	require.NoError(t, err)
	require.NoError(t, client.StartContainer(ctx, id))
	resp, err := client.ExecSync(ctx, id, []string{"echo", "hi"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(resp.Stdout))
	e.clk.Step(time.Second)

	var types []runtimeapi.ContainerEventType
	for range 5 {
		types = append(types, receive(t, events).ContainerEventType)
	}
	assert.Equal(t, []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, // sandbox
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, // sandbox
		runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
	}, types)
	st, err := client.ContainerStatus(ctx, id, false)
	require.NoError(t, err)
	assert.EqualValues(t, 3, st.Status.ExitCode)

	_, err = client.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}})
	require.ErrorIs(t, err, cri.ErrUnimplemented)
	stopEvents()
	require.NoError(t, receive(t, streamDone))
}
