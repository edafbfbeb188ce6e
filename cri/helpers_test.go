package cri_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// socketPath returns a socket path in a fresh directory short enough for the
// 108-byte limit of unix socket names (t.TempDir embeds the test name).
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kkcri")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return filepath.Join(dir, "cri.sock")
}

// serveRaw serves a bare gRPC server with whatever register adds, until the
// test ends.
func serveRaw(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	path := socketPath(t)
	lis, err := net.Listen("unix", path)
	require.NoError(t, err)
	srv := grpc.NewServer()
	register(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return path
}

// blockUntilDone parks until ctx ends, telling started first.
func blockUntilDone(ctx context.Context, started chan<- struct{}) error {
	if started != nil {
		started <- struct{}{}
	}
	<-ctx.Done()
	return ctx.Err()
}
