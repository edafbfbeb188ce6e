package upstreambench

import (
	"io"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// Upstream's constructors log a few lines at start-up; the relists
	// themselves log nothing at the default verbosity.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	goleak.VerifyTestMain(m)
}
