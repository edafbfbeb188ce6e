package pluginmanagertest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/kubeletkit/kubeletkit/pluginmanager"
	"github.com/kubeletkit/kubeletkit/pluginmanager/pluginmanagertest"
)

// A fake DRA plugin in a registry whose manager has no DRA handler: it is
// told why it was refused.
func Example() {
	dir, _ := os.MkdirTemp("", "registry")
	defer os.RemoveAll(dir)
	p := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.DRAPlugin, Name: "gpu.example.com"})
	l, err := net.Listen("unix", filepath.Join(dir, "dra.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.ServeListener(ctx, l) }()
	defer func() { stop(); <-done }()

	m, _ := pluginmanager.New(pluginmanager.Options{Dir: dir})
	m.Sync(context.Background())
	s := p.Statuses()[0]
	fmt.Println(s.PluginRegistered, filepath.Base(s.Error))
	// Output: false dra.sock
}
