package logs_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The benchmarks' large files are made once per process and removed
	// here, after the leak check (the cleanup replaces its os.Exit).
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeBenchFiles()
		os.Exit(code)
	}))
}
