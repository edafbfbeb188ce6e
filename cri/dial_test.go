package cri_test

import (
	"context"
	"io/fs"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// versionServer answers Version with a fixed response, or hangs when hang is set.
type versionServer struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	apiVersion string
	hang       bool
}

func (s *versionServer) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if s.hang {
		return nil, blockUntilDone(ctx, nil)
	}
	return &runtimeapi.VersionResponse{RuntimeName: "test", RuntimeVersion: "1.0", RuntimeApiVersion: s.apiVersion}, nil
}

func TestDialErrors(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T) string // returns the endpoint
		opts    cri.DialOptions
		wantIs  error
		wantMsg string
	}{
		{
			name:    "no socket",
			setup:   func(t *testing.T) string { return "unix://" + socketPath(t) },
			wantIs:  fs.ErrNotExist,
			wantMsg: "no socket at",
		},
		{
			name: "regular file",
			setup: func(t *testing.T) string {
				p := socketPath(t)
				require.NoError(t, os.WriteFile(p, nil, 0o600))
				return p
			},
			wantMsg: "is not a unix socket (it is a regular file)",
		},
		{
			name: "stale socket",
			setup: func(t *testing.T) string {
				p := socketPath(t)
				lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
				require.NoError(t, err)
				lis.SetUnlinkOnClose(false)
				require.NoError(t, lis.Close())
				return p
			},
			wantIs:  cri.ErrUnavailable,
			wantMsg: "nothing accepts connections",
		},
		{
			name: "gRPC but no CRI",
			setup: func(t *testing.T) string {
				return serveRaw(t, func(*grpc.Server) {})
			},
			wantIs:  cri.ErrNotCRI,
			wantMsg: "runtime.v1.RuntimeService/Version is not served",
		},
		{
			name: "wrong API version",
			setup: func(t *testing.T) string {
				return serveRaw(t, func(s *grpc.Server) {
					runtimeapi.RegisterRuntimeServiceServer(s, &versionServer{apiVersion: "v1alpha2"})
				})
			},
			wantIs:  cri.ErrNotCRI,
			wantMsg: `it reports API version "v1alpha2"`,
		},
		{
			name: "hung runtime",
			setup: func(t *testing.T) string {
				return serveRaw(t, func(s *grpc.Server) {
					runtimeapi.RegisterRuntimeServiceServer(s, &versionServer{hang: true})
				})
			},
			opts:    cri.DialOptions{ConnectTimeout: 50 * time.Millisecond},
			wantIs:  cri.ErrTimeout,
			wantMsg: "did not answer Version in time",
		},
		{
			name:    "unsupported scheme",
			setup:   func(*testing.T) string { return "tcp://127.0.0.1:10010" },
			wantMsg: `unsupported scheme "tcp"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cri.Dial(context.Background(), tt.setup(t), tt.opts)
			require.Error(t, err)
			assert.Nil(t, c)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
}

func TestDialChecksVersion(t *testing.T) {
	path := serveRaw(t, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, &versionServer{apiVersion: "v1"})
	})
	for _, endpoint := range []string{"unix://" + path, path} {
		c, err := cri.Dial(context.Background(), endpoint, cri.DialOptions{})
		require.NoError(t, err, endpoint)
		assert.Equal(t, "test", c.RuntimeVersion().RuntimeName)
		assert.Equal(t, endpoint, c.Endpoint())
		require.NoError(t, c.Close())
	}
}

func TestDialCanceled(t *testing.T) {
	path := serveRaw(t, func(s *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(s, &versionServer{hang: true})
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cri.Dial(ctx, path, cri.DialOptions{})
	require.ErrorIs(t, err, context.Canceled)
}
