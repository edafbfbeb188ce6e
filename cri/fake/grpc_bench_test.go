package fake_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// servedClient serves rt with cri.NewServer on a unix socket in a temp dir
// and returns a client dialled to it; both end when the benchmark does.
func servedClient(b *testing.B, rt *fake.Runtime) *cri.Client {
	b.Helper()
	srv, err := cri.NewServer(rt, rt, cri.ServerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "fake.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	client, err := cri.Dial(ctx, "unix://"+path, cri.DialOptions{})
	if err != nil {
		cancel()
		b.Fatal(err, <-served)
	}
	b.Cleanup(func() {
		_ = client.Close()
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			b.Error(err)
		}
	})
	return client
}

// benchGRPCList is benchList over the gRPC socket: what a kubelet pays to
// list the fake served by examples/fakecri, marshalling included.
func benchGRPCList(b *testing.B, list func(c *cri.Client) (int, error), want func(n int) int) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			rt, _ := benchNode(b, n)
			client := servedClient(b, rt)
			b.ReportAllocs()
			for b.Loop() {
				if got, err := list(client); err != nil || got != want(n) {
					b.Fatal(got, err)
				}
			}
		})
	}
}

func BenchmarkGRPCListContainers(b *testing.B) {
	benchGRPCList(b, func(c *cri.Client) (int, error) {
		l, err := c.ListContainers(context.Background(), nil)
		return len(l), err
	}, func(n int) int { return n })
}

func BenchmarkGRPCListPodSandbox(b *testing.B) {
	benchGRPCList(b, func(c *cri.Client) (int, error) {
		l, err := c.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{})
		return len(l), err
	}, func(n int) int { return n / 2 })
}
