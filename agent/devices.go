package agent

import (
	"log/slog"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/devices"
)

var _ containerconfig.ContainerDevices = (*devices.Manager)(nil)

// newDevices builds the device manager when Options.Node.DevicePluginDir
// is set; nil otherwise. With resource managers, the devices' topology
// hints range over the machine's NUMA nodes and their allocation reads the
// topology manager's affinity.
func newDevices(opts Options, res resourceManagers, log *slog.Logger) (*devices.Manager, error) {
	if opts.Node.DevicePluginDir == "" {
		return nil, nil
	}
	o := devices.Options{Dir: opts.Node.DevicePluginDir, Clock: opts.Clock, NUMANodes: res.numaNodes(), Logger: log.With("component", "devices")}
	if res.topology != nil {
		o.Affinity = res.topology
	}
	return devices.New(o)
}

// withDevices is the topology manager's admission when it allocates the
// devices too (upstream's resource allocation handler): the device manager
// releases the devices of pods no longer active and forgets what an earlier
// admission set aside for reuse before the topology manager hints and
// allocates, and a refused pod holds no device.
func withDevices(devs *devices.Manager, topology admission.Handler) admission.Handler {
	return admission.HandlerFunc(func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) {
		devs.Prepare(pod, others)
		ok, reason, message := topology.Admit(pod, others)
		if !ok {
			devs.RemovePod(pod.UID)
		}
		return ok, reason, message
	})
}
