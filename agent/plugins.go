package agent

import (
	"path/filepath"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/kubeletkit/kubeletkit/pluginmanager"
)

// pluginRegistryDir is where plugins announce themselves, upstream's
// <root-dir>/plugins_registry.
func (o Options) pluginRegistryDir() string { return filepath.Join(o.RootDir, "plugins_registry") }

// newPlugins builds the plugin registry's manager: CSI drivers register
// with the volumes' CSI registry (b.csi), which the CSI volumes look
// drivers up in; DRA drivers' kubelet plugins with the DRA manager's
// registry (b.dra), which prepares the pods' claims through them.
func (b *blocks) newPlugins() (*pluginmanager.Manager, error) {
	return pluginmanager.New(pluginmanager.Options{
		Dir:      b.opts.pluginRegistryDir(),
		Handlers: map[string]pluginmanager.Handler{registerapi.CSIPlugin: b.csi, registerapi.DRAPlugin: b.dra.Registry()},
		Clock:    b.clock,
		Logger:   b.log.With("component", "plugins"),
	})
}
