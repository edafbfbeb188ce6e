//go:build apiserver && containerd

package apiserver_test

import (
	"testing"

	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

func TestAPIServerOnContainerd(t *testing.T) {
	c, image := ctrdtest.Client(t)
	apiScenario(t, c, image, "containerd://")
}
