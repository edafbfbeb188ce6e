package agent

import (
	"log/slog"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/devices"
)

var _ containerconfig.ContainerDevices = (*devices.Manager)(nil)

// newDevices builds the device manager when Options.Node.DevicePluginDir
// is set; nil otherwise. numa are the machine's NUMA nodes when the
// resource managers know them: the devices' topology hints range over them.
func newDevices(opts Options, numa []int, log *slog.Logger) (*devices.Manager, error) {
	if opts.Node.DevicePluginDir == "" {
		return nil, nil
	}
	return devices.New(devices.Options{Dir: opts.Node.DevicePluginDir, Clock: opts.Clock, NUMANodes: numa, Logger: log.With("component", "devices")})
}
