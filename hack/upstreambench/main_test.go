package upstreambench

import (
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"
	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// Upstream's constructors log a few lines at start-up; the relists
	// themselves log nothing at the default verbosity, and the log reader
	// only its incomplete last lines.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeLogFiles()
		os.Exit(code)
	}))
}
