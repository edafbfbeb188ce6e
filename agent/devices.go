package agent

import (
	"log/slog"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/devices"
)

var _ containerconfig.ContainerDevices = (*devices.Manager)(nil)

// newDevices builds the device manager when Options.Node.DevicePluginDir
// is set; nil otherwise.
func newDevices(opts Options, log *slog.Logger) (*devices.Manager, error) {
	if opts.Node.DevicePluginDir == "" {
		return nil, nil
	}
	return devices.New(devices.Options{Dir: opts.Node.DevicePluginDir, Clock: opts.Clock, Logger: log.With("component", "devices")})
}
