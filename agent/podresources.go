package agent

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podresources"
)

// podResourcePods are the pods the pod-resources API reports on: upstream's
// active pods for List and Get, every desired pod for v1alpha1's List.
type podResourcePods struct{ view *podView }

var _ podresources.Pods = podResourcePods{}

func (p podResourcePods) ActivePods() []*v1.Pod { return p.view.admitted("") }
func (p podResourcePods) Pods() []*v1.Pod       { return p.view.pods.GetPods() }

// newPodResources builds the pod-resources API over the blocks the agent
// has: its pods, the DRA manager's prepared claims and, with a device
// plugin directory, the device manager, and with Options.Resources the CPU
// manager's exclusive CPUs and the memory manager's pinned memory. It serves RootDir/pod-resources/kubelet.sock
// only with HTTP.PodResources.
func (b *blocks) newPodResources() (*podresources.Server, error) {
	sources := podresources.Sources{DynamicResources: b.dra}
	if b.devices != nil {
		sources.Devices = b.devices
	}
	if b.res.cpu != nil {
		sources.CPUs = b.res.cpu
	}
	if b.res.memory != nil {
		sources.Memory = b.res.memory
	}
	return podresources.New(podresources.Options{Dir: filepath.Join(b.opts.RootDir, podresources.DirName),
		Pods: podResourcePods{view: b.view}, Sources: sources, ListAllPods: b.opts.HTTP.PodResourcesListAllPods, Clock: b.clock, Logger: b.log.With("component", "podresources"),
		Metrics: podResourcesMetrics(b.metrics)})
}

// PodResources answers the pod-resources API (package podresources) in
// process, whether or not HTTP.PodResources serves it on its socket.
func (a *Agent) PodResources() *podresources.Service { return a.podResources.Service() }
