package stats

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Provider produces a Summary of the node's resource usage.
type Provider interface {
	// Get measures the node and its pods now.
	Get(ctx context.Context) (*Summary, error)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context) (*Summary, error)

// Get calls f.
func (f ProviderFunc) Get(ctx context.Context) (*Summary, error) { return f(ctx) }

var _ Provider = ProviderFunc(nil)

// Summary is the node's resource usage at one moment.
type Summary struct {
	// Node is the usage of the node as a whole.
	Node NodeStats
	// Pods is the usage of each pod the runtime runs, in no order.
	Pods []PodStats
	// Incomplete, when not nil, says what could not be measured; the
	// rest of the summary holds. (A runtime that cannot list its
	// sandboxes' stats leaves pods measured from their containers alone.)
	Incomplete error
}

// NodeStats is the usage of the node.
type NodeStats struct {
	// Memory is the node's memory; nil when not measured.
	Memory *MemoryStats
	// AllocatableMemory is the memory of the cgroup that holds the pods,
	// whose capacity is the node's allocatable memory; nil when not
	// measured (no allocatableMemory.available signal then).
	AllocatableMemory *MemoryStats
	// Fs is the filesystem of the kubelet's root directory (nodefs).
	Fs *FsStats
	// ImageFs is the filesystem where the runtime keeps images (imagefs).
	ImageFs *FsStats
	// DedicatedImageFs says whether ImageFs is a different filesystem from
	// Fs. It decides which pod usage counts against which signal and
	// which node-level garbage collection runs for which signal.
	DedicatedImageFs bool
	// ContainerFs is the filesystem where the runtime keeps the
	// containers' writable layers (containerfs). Nil means it is ImageFs,
	// as when the runtime reports a single filesystem.
	ContainerFs *FsStats
	// SplitContainerFs says whether the runtime reports its container
	// filesystem at another mountpoint than its image filesystem (upstream's
	// KubeletSeparateDiskGC: the writable layers on nodefs, the images on
	// a disk of their own). Like DedicatedImageFs, it decides the
	// containerfs thresholds, rankings and garbage collection.
	SplitContainerFs bool
	// Rlimit is the node's process limit and count; nil when not measured.
	Rlimit *RlimitStats
}

// MemoryStats is the memory of the node, a cgroup, a pod or a container.
type MemoryStats struct {
	// Time is when it was measured.
	Time time.Time
	// AvailableBytes is capacity minus working set (node and cgroup
	// only; zero for pods and containers).
	AvailableBytes uint64
	// WorkingSetBytes is the memory in use that cannot be reclaimed
	// without swapping: usage minus inactive file-backed pages.
	WorkingSetBytes uint64
}

// FsStats is the usage of a filesystem, or of one consumer on it.
type FsStats struct {
	// Time is when it was measured.
	Time time.Time
	// AvailableBytes are the bytes free for unprivileged users
	// (filesystems only).
	AvailableBytes uint64
	// CapacityBytes is the filesystem's size (filesystems only).
	CapacityBytes uint64
	// UsedBytes are the bytes in use (by the consumer, for a consumer).
	UsedBytes uint64
	// InodesFree are the free inodes; meaningful only when Inodes > 0.
	InodesFree uint64
	// Inodes is the number of inodes; zero means the filesystem does not
	// report inodes (no inode signal then).
	Inodes uint64
	// InodesUsed are the inodes in use (by the consumer, for a consumer).
	InodesUsed uint64
}

// RlimitStats is the node's process limit.
type RlimitStats struct {
	// Time is when it was measured.
	Time time.Time
	// MaxPID is the largest number of processes (threads) the node allows.
	MaxPID uint64
	// NumOfRunningProcesses is the number of processes (threads) now.
	NumOfRunningProcesses uint64
}

// PodStats is the usage of one pod.
type PodStats struct {
	// UID, Name and Namespace identify the pod; the manager matches stats
	// to pods by UID.
	UID       types.UID
	Name      string
	Namespace string
	// Memory is the pod's memory (its cgroup's working set); nil when not
	// measured.
	Memory *MemoryStats
	// ProcessCount is the number of processes in the pod; nil when not
	// measured.
	ProcessCount *uint64
	// Containers is the usage of each running container.
	Containers []ContainerStats
	// Volumes is the usage of the pod's local volumes (emptyDir), by the
	// volume's name in the pod spec.
	Volumes []VolumeStats
}

// ContainerStats is the usage of one container.
type ContainerStats struct {
	// Name is the container's name in the pod spec.
	Name string
	// Memory is the container's memory; nil when not measured.
	Memory *MemoryStats
	// Rootfs is the container's writable layer; nil when not measured.
	Rootfs *FsStats
	// Logs is the container's logs; nil when not measured.
	Logs *FsStats
}

// VolumeStats is the usage of one volume of a pod.
type VolumeStats struct {
	// Name is the volume's name in the pod spec.
	Name string
	// FsStats holds UsedBytes and InodesUsed of the volume.
	FsStats
}
