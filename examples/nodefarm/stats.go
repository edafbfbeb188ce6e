package nodefarm

import (
	"context"
	"fmt"

	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/status/node"
)

// farmInodes is how many inodes a farm node's filesystems have: the
// declared machine has no inode count of its own.
const farmInodes = 1 << 26

// machineStats measures a farm node as the machine it declares, the way
// kubemark's hollow nodes report a fake cAdvisor: the pods as the inner
// provider measures them (the fake runtime's stats, the node directory's
// logs and volumes), the node's memory and filesystems as the declared
// capacity less what its pods use. Without it every node of a farm would
// weigh its declared 256Gi and 1Ti against the host's memory and disk, and
// a host disk 85% full would put every node under DiskPressure
// (imagefs.available<15%) and refuse every pod.
type machineStats struct {
	inner   stats.Provider
	machine node.Machine
	clock   clock.PassiveClock
}

var _ stats.Provider = machineStats{}

// Get measures the node's pods with the inner provider and the node as
// the machine's capacity less their use.
func (m machineStats) Get(ctx context.Context) (*stats.Summary, error) {
	s, err := m.inner.Get(ctx)
	if s == nil {
		return nil, err
	}
	capacity, cerr := m.machine.Capacity(ctx)
	if cerr != nil {
		return nil, fmt.Errorf("farm node stats: machine capacity: %w", cerr)
	}
	now := m.clock.Now()
	var memUsed, fsUsed uint64
	for _, p := range s.Pods {
		if p.Memory != nil {
			memUsed += p.Memory.WorkingSetBytes
		}
		for _, c := range p.Containers {
			for _, fs := range []*stats.FsStats{c.Rootfs, c.Logs} {
				if fs != nil {
					fsUsed += fs.UsedBytes
				}
			}
		}
		for _, v := range p.Volumes {
			fsUsed += v.UsedBytes
		}
	}
	mem := uint64(max(0, capacity.Memory().Value()))
	s.Node.Memory = &stats.MemoryStats{Time: now, WorkingSetBytes: memUsed, AvailableBytes: mem - min(mem, memUsed)}
	s.Node.AllocatableMemory = nil
	disk := uint64(max(0, capacity.StorageEphemeral().Value()))
	var imagesUsed uint64
	if s.Node.ImageFs != nil {
		imagesUsed = s.Node.ImageFs.UsedBytes // the runtime's images
	}
	used := fsUsed + imagesUsed
	s.Node.Fs = &stats.FsStats{Time: now, CapacityBytes: disk, UsedBytes: used, AvailableBytes: disk - min(disk, used),
		Inodes: farmInodes, InodesFree: farmInodes}
	s.Node.ImageFs = &stats.FsStats{Time: now, CapacityBytes: disk, UsedBytes: used, AvailableBytes: disk - min(disk, used),
		Inodes: farmInodes, InodesFree: farmInodes}
	s.Node.DedicatedImageFs = false
	return s, err
}
