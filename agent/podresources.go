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
// has: its pods and, with a device plugin directory, the device manager.
// There is no CPU, memory or DRA manager: the API answers as upstream's
// policies "none" and no claims. It serves RootDir/pod-resources/kubelet.sock
// only with HTTP.PodResources.
func (b *blocks) newPodResources() (*podresources.Server, error) {
	var sources podresources.Sources
	if b.devices != nil {
		sources.Devices = b.devices
	}
	return podresources.New(podresources.Options{Dir: filepath.Join(b.opts.RootDir, podresources.DirName),
		Pods: podResourcePods{view: b.view}, Sources: sources, Clock: b.clock, Logger: b.log.With("component", "podresources")})
}

// PodResources answers the pod-resources API (package podresources) in
// process, whether or not HTTP.PodResources serves it on its socket.
func (a *Agent) PodResources() *podresources.Service { return a.podResources.Service() }
