package ctrdtest

import (
	"context"
	"os"
	"strconv"
	"strings"
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

// HasContainerEvents reports whether the containerd behind c implements CRI
// GetContainerEvents, from the version it reports: containerd 1.7 added it,
// so Debian's 1.6 has none and the 2.x of hack/containerd-start.sh
// (KK_CONTAINERD_VERSION) has it. A runtime other than containerd, or a
// version it cannot read, fails the test: the expectation must be explicit.
func HasContainerEvents(t testing.TB, c *cri.Client) bool {
	t.Helper()
	v := c.RuntimeVersion()
	if v.GetRuntimeName() != "containerd" {
		t.Fatalf("runtime %q: want containerd", v.GetRuntimeName())
	}
	major, minor, ok := majorMinor(v.GetRuntimeVersion())
	if !ok {
		t.Fatalf("containerd version %q: want MAJOR.MINOR...", v.GetRuntimeVersion())
	}
	return major > 1 || (major == 1 && minor >= 7)
}

// majorMinor reads the major and minor numbers of a version such as
// "v2.4.2" or Debian's "1.6.20~ds1".
func majorMinor(version string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(parts[0])
	minor, err2 = strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
