package podsync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// GCPolicy bounds the dead containers kept, as upstream's container GC
// policy does.
type GCPolicy struct {
	// MinAge: a dead container younger than this (since creation) is kept.
	MinAge time.Duration
	// MaxPerPodContainer is how many dead instances of one container of one
	// pod are kept, newest first; negative means no limit. (Upstream's
	// default is 1.)
	MaxPerPodContainer int
	// MaxContainers is how many dead containers the node keeps in all;
	// negative means no limit. The oldest go first.
	MaxContainers int
}

// PodExists reports whether a pod is still known to the agent; the dead
// containers and sandboxes of pods it does not know are removed.
type PodExists func(uid types.UID) bool

// GarbageCollect removes dead containers (exited, or created and never
// started) beyond the policy's limits and every dead container of pods that
// no longer exist, then the sandboxes that are not ready and hold no
// container, except a live pod's newest one, and, with ContainerLogLinksDir,
// the log links whose file is gone. Objects not created by a kubelet (no
// PodUIDLabel) are left alone. It returns the errors of the removals it
// tried, joined; one failure does not stop the others.
func (s *Syncer) GarbageCollect(ctx context.Context, policy GCPolicy, exists PodExists) error {
	containers, err := s.rt.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("garbage collect: list containers: %w", err)
	}
	now := s.clock.Now()
	type key struct {
		uid  types.UID
		name string
	}
	groups := map[key][]*runtimeapi.Container{}
	inSandbox := map[string]int{}
	known := make(map[string]bool, len(containers))
	for _, c := range containers {
		known[c.GetId()] = true
		uid := cri.PodUIDFromLabels(c.GetLabels())
		if uid == "" {
			continue
		}
		inSandbox[c.GetPodSandboxId()]++
		st := c.GetState()
		if st == runtimeapi.ContainerState_CONTAINER_RUNNING || st == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			continue
		}
		if now.Sub(time.Unix(0, c.GetCreatedAt())) < policy.MinAge {
			continue
		}
		k := key{uid, c.GetLabels()[cri.ContainerNameLabel]}
		groups[k] = append(groups[k], c)
	}
	var errs []error
	remove := func(c *runtimeapi.Container) {
		if err := s.rt.RemoveContainer(ctx, c.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.GetId(), err))
			return
		}
		s.unlinkLog(c)
		delete(known, c.GetId())
		inSandbox[c.GetPodSandboxId()]--
	}
	var kept []*runtimeapi.Container
	for k, g := range groups {
		slices.SortFunc(g, func(a, b *runtimeapi.Container) int { return cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt()) })
		limit := policy.MaxPerPodContainer
		if exists != nil && !exists(k.uid) {
			limit = 0
		}
		for i, c := range g {
			if limit >= 0 && i >= limit {
				remove(c)
			} else {
				kept = append(kept, c)
			}
		}
	}
	if policy.MaxContainers >= 0 && len(kept) > policy.MaxContainers {
		slices.SortFunc(kept, func(a, b *runtimeapi.Container) int { return cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt()) })
		for _, c := range kept[:len(kept)-policy.MaxContainers] {
			remove(c)
		}
	}

	sandboxes, err := s.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("garbage collect: list sandboxes: %w", err))...)
	}
	newest := map[types.UID]*runtimeapi.PodSandbox{}
	for _, sb := range sandboxes {
		uid := cri.PodUIDFromLabels(sb.GetLabels())
		if n := newest[uid]; n == nil || sb.GetCreatedAt() > n.GetCreatedAt() {
			newest[uid] = sb
		}
	}
	for _, sb := range sandboxes {
		uid := cri.PodUIDFromLabels(sb.GetLabels())
		if uid == "" || sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY || inSandbox[sb.GetId()] > 0 {
			continue
		}
		alive := exists == nil || exists(uid)
		if alive && newest[uid] == sb {
			continue
		}
		if err := s.rt.RemovePodSandbox(ctx, sb.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.GetId(), err))
		}
	}
	if err := s.removeDanglingLogLinks(known); err != nil {
		errs = append(errs, fmt.Errorf("garbage collect: container log links: %w", err))
	}
	return errors.Join(errs...)
}
