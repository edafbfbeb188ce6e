package agent

import (
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/devices"
)

var _ containerconfig.ContainerDevices = (*devices.Manager)(nil)

// newDevices builds the device manager when Options.Node.DevicePluginDir is set.
func (a *Agent) newDevices() error {
	if a.opts.Node.DevicePluginDir == "" {
		return nil
	}
	m, err := devices.New(devices.Options{Dir: a.opts.Node.DevicePluginDir, Clock: a.clock, Logger: a.log.With("component", "devices")})
	if err != nil {
		return err
	}
	a.devices = m
	return nil
}

// containerDevices is the container config hook: the device manager, or none.
func (a *Agent) containerDevices() containerconfig.ContainerDevices {
	if a.devices == nil {
		return nil
	}
	return a.devices
}
