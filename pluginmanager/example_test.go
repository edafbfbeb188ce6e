package pluginmanager_test

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

// printer is a Handler that prints what it is asked.
type printer struct{}

func (printer) ValidatePlugin(name, endpoint string, versions []string) error { return nil }
func (printer) RegisterPlugin(_ context.Context, name, endpoint string, versions []string) error {
	fmt.Println("registered", name, "at", filepath.Base(endpoint), versions)
	return nil
}
func (printer) DeRegisterPlugin(name, endpoint string) { fmt.Println("deregistered", name) }

// A CSI driver's registrar announces the driver in the registry
// directory; one Sync registers it, and another, once its socket is gone,
// deregisters it. An agent runs Run, which syncs every second.
func Example() {
	dir, _ := os.MkdirTemp("", "registry")
	defer os.RemoveAll(dir)
	m, err := pluginmanager.New(pluginmanager.Options{Dir: dir,
		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: printer{}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	registrar := pluginmanagertest.New(&registerapi.PluginInfo{Type: registerapi.CSIPlugin,
		Name: "csi.example.com", Endpoint: "/var/lib/kubelet/plugins/csi.example.com/csi.sock", SupportedVersions: []string{"1.0.0"}})
	l, err := net.Listen("unix", filepath.Join(dir, "csi.example.com-reg.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- registrar.ServeListener(ctx, l) }()

	m.Sync(context.Background())
	fmt.Println("told registered:", registrar.Statuses()[0].PluginRegistered)
	stop()
	<-done
	m.Sync(context.Background())
	// Output:
	// registered csi.example.com at csi.sock [1.0.0]
	// told registered: true
	// deregistered csi.example.com
}
