package podsync

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// MinDeadPerContainer is how many dead instances of a container
// DeadContainersToRemove keeps at least while the pod's content must stay,
// whatever the caller asks: the newest, which the pod's status names as the
// container's last termination (its lastState, kubectl logs --previous).
// Upstream's minDeadContainerInPod.
const MinDeadPerContainer = 1

// DeadContainersToRemove decides which dead containers of a pod to remove
// when the pod lifecycle event generator reports that one of its containers
// (or its sandbox), diedID, stopped running: upstream kubelet's
// cleanUpContainersInPod with its pod container deletor, which removes a
// pod's dead containers within seconds of their death where the container
// garbage collection (GarbageCollect) would take them only at its next
// pass, a minute apart.
//
// status is the pod's runtime status as of the event (the pleg cache's).
// Only exited containers (CONTAINER_EXITED) are candidates: a running,
// created or unknown one never is.
//
//   - When contentRemovable is false (the pod runs, or is being stopped),
//     the candidates are the exited instances of the container that died,
//     by container name, and the newest keep of them stay (keep is raised to
//     MinDeadPerContainer). A diedID the status does not hold as a container
//     (a sandbox, or a container already gone) gives nothing.
//   - When contentRemovable is true (podworkers' ShouldPodContentBeRemoved:
//     the pod was evicted, or it was deleted and has terminated), every
//     exited container of the pod, whatever its name, is removed, whatever
//     diedID names.
//
// The result is newest first by creation time (ties: the higher attempt,
// then the lower ID), and nil when nothing is to be removed. Sandboxes are
// never chosen: the garbage collection removes them once they hold no
// container. status is only read.
func DeadContainersToRemove(status *cri.PodStatus, diedID string, keep int, contentRemovable bool) []*runtimeapi.ContainerStatus {
	if status == nil {
		return nil
	}
	name, allNames := "", contentRemovable
	if contentRemovable {
		keep = 0
	} else {
		keep = max(keep, MinDeadPerContainer)
		died := status.ContainerByID(diedID)
		if diedID == "" || died == nil {
			return nil
		}
		name = cri.ContainerName(died)
	}
	var candidates []*runtimeapi.ContainerStatus
	for _, c := range status.Containers {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		if allNames || cri.ContainerName(c) == name {
			candidates = append(candidates, c)
		}
	}
	if len(candidates) <= keep {
		return nil
	}
	slices.SortStableFunc(candidates, func(a, b *runtimeapi.ContainerStatus) int {
		if c := cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.GetMetadata().GetAttempt(), a.GetMetadata().GetAttempt()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetId(), b.GetId())
	})
	return candidates[keep:]
}

// RemoveDeadContainer removes one dead container from the runtime, and its
// log link under Options.ContainerLogLinksDir, as the garbage collection
// removes one; c is the container's status (its ID and labels). The
// container's log file stays: the pod's log directory goes with the pod.
// It may be called concurrently with the pod's sync: a dead container is
// no part of a sync's plan (ComputeActions looks at the newest instance of
// each container only, which DeadContainersToRemove never chooses while
// the pod runs).
func (s *Syncer) RemoveDeadContainer(ctx context.Context, c *runtimeapi.ContainerStatus) error {
	if err := s.rt.RemoveContainer(ctx, c.GetId()); err != nil {
		return fmt.Errorf("remove container %s: %w", c.GetId(), err)
	}
	s.unlinkLogOf(c.GetId(), c.GetLabels())
	return nil
}
