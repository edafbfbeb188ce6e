package credentialprovider_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// pluginDir holds the test plugin, built once from testdata/plugin and
// named "fake-provider".
var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "credentialprovider-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "fake-provider"), "./testdata/plugin").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test plugin: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	pluginDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}
