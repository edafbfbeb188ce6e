package ctrdtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Client dials the test containerd and returns the client, closed when the
// test ends, and the busybox image to run.
func Client(t testing.TB) (*cri.Client, string) {
	t.Helper()
	endpoint, image := os.Getenv("KK_CRI_ENDPOINT"), os.Getenv("KK_BUSYBOX_IMAGE")
	if endpoint == "" || image == "" {
		t.Fatal("KK_CRI_ENDPOINT and KK_BUSYBOX_IMAGE must be set: run hack/containerd-start.sh and source its env file")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cri.Dial(ctx, endpoint, cri.DialOptions{})
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, image
}
