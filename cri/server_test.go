package cri_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// stubRuntime answers Version and whatever function fields are set; any other
// call panics through the nil embedded interfaces, which fails the test.
type stubRuntime struct {
	cri.RuntimeService
	cri.ImageService
	listContainers func(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	events         func(context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error]
}

func (s *stubRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "stub", RuntimeApiVersion: "v1"}, nil
}

func (s *stubRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return s.listContainers(ctx, f)
}

func (s *stubRuntime) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	return s.events(ctx)
}

// serve runs a cri.Server for rt on a fresh socket and dials it. Both stop
// when the test ends; the server's Serve must return by then.
func serve(t *testing.T, rt cri.RuntimeService, img cri.ImageService, opts cri.DialOptions) *cri.Client {
	t.Helper()
	path := socketPath(t)
	srv, err := cri.NewServer(rt, img, cri.ServerOptions{ShutdownTimeout: time.Second})
	require.NoError(t, err)
	lis, err := cri.Listen("unix://" + path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	c, err := cri.Dial(context.Background(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after its ctx ended")
		}
	})
	return c
}

func TestServerErrorMapping(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantIs   error
		wantCode codes.Code
	}{
		{"not found", fmt.Errorf("container %q: %w", "abc", cri.ErrNotFound), cri.ErrNotFound, codes.NotFound},
		{"already exists", fmt.Errorf("name %q reserved: %w", "x", cri.ErrAlreadyExists), cri.ErrAlreadyExists, codes.AlreadyExists},
		{"invalid", fmt.Errorf("bad log path: %w", cri.ErrInvalidArgument), cri.ErrInvalidArgument, codes.InvalidArgument},
		{"precondition", fmt.Errorf("not running: %w", cri.ErrFailedPrecondition), cri.ErrFailedPrecondition, codes.FailedPrecondition},
		{"unimplemented", cri.ErrUnimplemented, cri.ErrUnimplemented, codes.Unimplemented},
		{"unknown", errors.New("disk on fire"), nil, codes.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &stubRuntime{listContainers: func(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
				return nil, tt.err
			}}
			c := serve(t, rt, rt, cri.DialOptions{})
			_, err := c.ListContainers(context.Background(), nil)
			require.Error(t, err)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			var cerr *cri.Error
			require.ErrorAs(t, err, &cerr)
			assert.Equal(t, "ListContainers", cerr.Method)
			assert.Equal(t, tt.wantCode, cerr.Code)
			assert.Equal(t, tt.err.Error(), cerr.Message, "the runtime's message reaches the caller")
		})
	}
}

func TestClientHungCall(t *testing.T) {
	started := make(chan struct{}, 1)
	rt := &stubRuntime{listContainers: func(ctx context.Context, _ *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
		return nil, blockUntilDone(ctx, started)
	}}

	t.Run("caller cancels", func(t *testing.T) {
		c := serve(t, rt, rt, cri.DialOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := c.ListContainers(ctx, nil); errc <- err }()
		<-started
		cancel()
		select {
		case err := <-errc:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("a canceled call did not return")
		}
	})

	t.Run("request timeout", func(t *testing.T) {
		c := serve(t, rt, rt, cri.DialOptions{Timeout: 50 * time.Millisecond})
		_, err := c.ListContainers(context.Background(), nil)
		<-started
		require.ErrorIs(t, err, cri.ErrTimeout)
		assert.Contains(t, err.Error(), "within 50ms")
	})
}

func TestServerEvents(t *testing.T) {
	events := []*runtimeapi.ContainerEventResponse{
		{ContainerId: "a", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, CreatedAt: 1},
		{ContainerId: "a", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, CreatedAt: 2},
	}
	streamErr := fmt.Errorf("queue overflow: %w", cri.ErrUnavailable)

	t.Run("events then failure", func(t *testing.T) {
		rt := &stubRuntime{events: func(context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
			return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
				for _, ev := range events {
					if !yield(ev, nil) {
						return
					}
				}
				yield(nil, streamErr)
			}
		}}
		c := serve(t, rt, rt, cri.DialOptions{})
		var got []string
		var gotErr error
		for ev, err := range c.GetContainerEvents(context.Background()) {
			if err != nil {
				gotErr = err
				break
			}
			got = append(got, ev.ContainerEventType.String())
		}
		assert.Equal(t, []string{"CONTAINER_CREATED_EVENT", "CONTAINER_STARTED_EVENT"}, got)
		assert.ErrorIs(t, gotErr, cri.ErrUnavailable)
	})

	t.Run("runtime ends the stream", func(t *testing.T) {
		rt := &stubRuntime{events: func(context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
			return func(func(*runtimeapi.ContainerEventResponse, error) bool) {}
		}}
		c := serve(t, rt, rt, cri.DialOptions{})
		var gotErr error
		for _, err := range c.GetContainerEvents(context.Background()) {
			gotErr = err
		}
		assert.ErrorIs(t, gotErr, io.EOF)
	})

	t.Run("ends with ctx", func(t *testing.T) {
		started := make(chan struct{}, 1)
		rt := &stubRuntime{events: func(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
			return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
				if yield(events[0], nil) {
					_ = blockUntilDone(ctx, started)
				}
			}
		}}
		c := serve(t, rt, rt, cri.DialOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		for ev, err := range c.GetContainerEvents(ctx) {
			require.NoError(t, err)
			require.NotNil(t, ev)
			n++
			<-started
			cancel()
		}
		assert.Equal(t, 1, n, "the sequence ends without an error when ctx ends")
	})

	t.Run("server shutdown ends streams", func(t *testing.T) {
		// The cleanup of serve waits for Serve to return: a stream parked in
		// the runtime must not hold the graceful stop up.
		started := make(chan struct{}, 1)
		rt := &stubRuntime{events: func(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
			return func(func(*runtimeapi.ContainerEventResponse, error) bool) { _ = blockUntilDone(ctx, started) }
		}}
		c := serve(t, rt, rt, cri.DialOptions{})
		go func() {
			for range c.GetContainerEvents(context.Background()) {
			}
		}()
		<-started
	})
}

func TestListen(t *testing.T) {
	t.Run("replaces a stale socket", func(t *testing.T) {
		path := socketPath(t)
		stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		require.NoError(t, err)
		stale.SetUnlinkOnClose(false)
		require.NoError(t, stale.Close())

		lis, err := cri.Listen(path)
		require.NoError(t, err)
		info, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o660), info.Mode().Perm())
		require.NoError(t, lis.Close())
		_, err = os.Stat(path)
		assert.ErrorIs(t, err, os.ErrNotExist, "closing the listener removes the socket")
	})
	t.Run("refuses to replace a file", func(t *testing.T) {
		path := socketPath(t)
		require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o600))
		_, err := cri.Listen(path)
		require.ErrorContains(t, err, "exists and is not a socket")
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, "keep me", string(data))
	})
}

func TestNewServerValidates(t *testing.T) {
	_, err := cri.NewServer(nil, &stubRuntime{}, cri.ServerOptions{})
	assert.ErrorContains(t, err, "nil RuntimeService")
	_, err = cri.NewServer(&stubRuntime{}, nil, cri.ServerOptions{})
	assert.ErrorContains(t, err, "nil ImageService")
}

// sandboxUpdater is a stub runtime that takes UpdatePodSandboxResources.
type sandboxUpdater struct {
	stubRuntime
	got *runtimeapi.UpdatePodSandboxResourcesRequest
}

func (s *sandboxUpdater) UpdatePodSandboxResources(_ context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) error {
	s.got = req
	return nil
}

// UpdatePodSandboxResources goes through the client and the server to a
// runtime that takes it; a runtime without it answers Unimplemented, which
// the client gives as cri.ErrUnimplemented (what a resize ignores).
func TestUpdatePodSandboxResources(t *testing.T) {
	req := &runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: "sb1",
		Resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 64 << 20}}
	rt := &sandboxUpdater{}
	c := serve(t, rt, rt, cri.DialOptions{})
	require.NoError(t, c.UpdatePodSandboxResources(context.Background(), req))
	require.NotNil(t, rt.got)
	assert.Equal(t, "sb1", rt.got.GetPodSandboxId())
	assert.Equal(t, int64(512), rt.got.GetResources().GetCpuShares())

	plain := &stubRuntime{}
	c = serve(t, plain, plain, cri.DialOptions{})
	assert.ErrorIs(t, c.UpdatePodSandboxResources(context.Background(), req), cri.ErrUnimplemented)
}
