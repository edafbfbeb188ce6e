package agent

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/allocation"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

// resizeRetryEvery is how many housekeeping passes go between retries of
// the deferred resizes (3 minutes, upstream's period; a pod that leaves
// the node retries them at once).
const resizeRetryEvery = 90

// newAllocation builds the allocation block over the agent's pods and node,
// and reads its checkpoint under RootDir.
func (a *Agent) newAllocation() error {
	m, err := allocation.New(allocation.Options{
		CheckpointPath: filepath.Join(a.opts.RootDir, allocation.CheckpointFile),
		Node: allocation.NodeAllocatableFunc(func() (v1.ResourceList, error) {
			n, err := a.admissionNode()
			if err != nil {
				return nil, err
			}
			return n.Status.Allocatable, nil
		}),
		Pods: allocation.PodsFuncs{Others: a.otherAdmittedPods, ByUID: func(uid types.UID) (*v1.Pod, bool) {
			p, ok := a.pods.GetPodByUID(uid)
			return p, ok && !a.workers.IsPodTerminationRequested(uid)
		}},
		Clock: a.clock, Logger: a.log.With("component", "allocation"), Recorder: a.events,
	})
	if err != nil {
		return err
	}
	a.alloc = m
	return m.Load()
}

// retryPendingResizes takes up the deferred resizes again; a pod whose
// resize conditions change is synced so that its status says so.
func (a *Agent) retryPendingResizes() {
	for _, p := range a.alloc.RetryPendingResizes() {
		a.HandlePodSyncs([]*v1.Pod{p})
	}
}

// actuation is the runtime's side of a resize from the pod's runtime
// status: a running container is actuated once it runs with its allocated
// resources (podsync.ResizeDone). Nil when the runtime status is unknown.
func actuation(rs *cri.PodStatus) allocation.Actuation {
	if rs == nil {
		return nil
	}
	return allocation.ActuationFunc(func(c *v1.Container) bool {
		st := rs.ContainerByName(c.Name)
		return st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || podsync.ResizeDone(c, st)
	})
}

// podCgroupResizer resizes a pod's cgroup with its runtime class's
// overhead counted, as the cgroup was made (ensurePodCgroup).
type podCgroupResizer struct{ a *Agent }

// ResizePod implements podsync.PodCgroupResizer.
func (r podCgroupResizer) ResizePod(pod *v1.Pod, grow bool) error {
	return r.a.cgroups.ResizePod(podsync.WithOverhead(pod, r.a.opts.Cluster.RuntimeClasses), grow)
}
