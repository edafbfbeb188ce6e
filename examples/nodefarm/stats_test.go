package nodefarm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// A farm node's memory and filesystems are its declared machine's less
// what its pods and images use, whatever the host's are.
func TestMachineStats(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	host := &stats.FsStats{CapacityBytes: 100 << 30, AvailableBytes: 1 << 30} // a host disk 99% full
	inner := stats.ProviderFunc(func(context.Context) (*stats.Summary, error) {
		return &stats.Summary{
			Node: stats.NodeStats{Fs: host, ImageFs: &stats.FsStats{UsedBytes: 5 << 20}, DedicatedImageFs: true,
				Memory: &stats.MemoryStats{AvailableBytes: 10 << 20}},
			Pods: []stats.PodStats{{UID: "a", Memory: &stats.MemoryStats{WorkingSetBytes: 1 << 30},
				Containers: []stats.ContainerStats{{Name: "c", Logs: &stats.FsStats{UsedBytes: 1 << 20}, Rootfs: &stats.FsStats{UsedBytes: 2 << 20}}},
				Volumes:    []stats.VolumeStats{{Name: "v", FsStats: stats.FsStats{UsedBytes: 3 << 20}}}}},
		}, nil
	})
	m := machineStats{inner: inner, machine: DefaultMachine, clock: clocktesting.NewFakePassiveClock(now)}
	s, err := m.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, &stats.MemoryStats{Time: now, WorkingSetBytes: 1 << 30, AvailableBytes: 255 << 30}, s.Node.Memory)
	wantFs := &stats.FsStats{Time: now, CapacityBytes: 1 << 40, UsedBytes: 11 << 20, AvailableBytes: 1<<40 - 11<<20,
		Inodes: farmInodes, InodesFree: farmInodes}
	assert.Equal(t, wantFs, s.Node.Fs)
	assert.Equal(t, wantFs, s.Node.ImageFs)
	assert.False(t, s.Node.DedicatedImageFs)
	assert.Len(t, s.Pods, 1)

	// The inner provider's error goes with what it measured.
	partial := errors.New("no sandbox stats")
	m.inner = stats.ProviderFunc(func(context.Context) (*stats.Summary, error) { return &stats.Summary{}, partial })
	s, err = m.Get(context.Background())
	require.ErrorIs(t, err, partial)
	assert.Equal(t, uint64(1<<40), s.Node.Fs.AvailableBytes)
	m.inner = stats.ProviderFunc(func(context.Context) (*stats.Summary, error) { return nil, partial })
	_, err = m.Get(context.Background())
	require.ErrorIs(t, err, partial)
}
