package agent

import (
	"log/slog"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/allocation"
	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/memorymanager"
)

// resizeRetryEvery is how many housekeeping passes go between retries of
// the deferred resizes (3 minutes, upstream's period; a pod that leaves
// the node retries them at once).
const resizeRetryEvery = 90

// newAllocation builds the allocation block over the node's pods and its
// allocatable, and reads its checkpoint under RootDir.
func newAllocation(opts Options, nv *nodeView, view *podView, events EventRecorder, log *slog.Logger) (*allocation.Manager, error) {
	m, err := allocation.New(allocation.Options{
		CheckpointPath: filepath.Join(opts.RootDir, allocation.CheckpointFile),
		Node: allocation.NodeAllocatableFunc(func() (v1.ResourceList, error) {
			n, err := nv.admissionNode()
			if err != nil {
				return nil, err
			}
			return n.Status.Allocatable, nil
		}),
		Pods: allocation.PodsFuncs{Others: view.others, ByUID: func(uid types.UID) (*v1.Pod, bool) {
			p, ok := view.pods.GetPodByUID(uid)
			return p, ok && !view.workers.IsPodTerminationRequested(uid)
		}},
		Clock: opts.Clock, Logger: log.With("component", "allocation"), Recorder: events,
		CPUManagerStatic:       opts.Resources.CPUManagerPolicy == cpumanager.PolicyStatic,
		MemoryManagerStatic:    opts.Resources.MemoryManagerPolicy == memorymanager.PolicyStatic,
		PodLevelResizeDisabled: opts.Resources.DisablePodLevelResize,
	})
	if err != nil {
		return nil, err
	}
	return m, m.Load()
}

// actuation is the runtime's side of a resize from the pod's runtime
// status: a running container is actuated once it runs with its allocated
// resources (podsync.ResizeDone), the pod's own cgroup once it has the
// pod-level ones (podActuated). Nil when the runtime status is unknown.
func actuation(pod *v1.Pod, rs *cri.PodStatus, podActuated func(*v1.Pod) bool) allocation.Actuation {
	if rs == nil {
		return nil
	}
	return allocation.ActuationFuncs{
		Container: func(c *v1.Container) bool {
			st := rs.ContainerByName(c.Name)
			return st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || podsync.ResizeDone(pod, c, st)
		},
		Pod: podActuated,
	}
}
