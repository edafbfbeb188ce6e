package eviction_test

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

const (
	Ki = 1024
	Mi = 1024 * Ki
	Gi = 1024 * Mi
)

type podOpt func(*v1.Pod)

// newPod builds a pod with one container "c" (no resources).
func newPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func priority(n int32) podOpt { return func(p *v1.Pod) { p.Spec.Priority = &n } }

func request(res v1.ResourceName, q string) podOpt {
	return func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		if c.Resources.Requests == nil {
			c.Resources.Requests = v1.ResourceList{}
		}
		c.Resources.Requests[res] = resource.MustParse(q)
	}
}

func limit(res v1.ResourceName, q string) podOpt {
	return func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		if c.Resources.Limits == nil {
			c.Resources.Limits = v1.ResourceList{}
		}
		c.Resources.Limits[res] = resource.MustParse(q)
	}
}

func annotation(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func grace(s int64) podOpt { return func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s } }

func emptyDir(name, sizeLimit string) podOpt {
	return func(p *v1.Pod) {
		ed := &v1.EmptyDirVolumeSource{}
		if sizeLimit != "" {
			q := resource.MustParse(sizeLimit)
			ed.SizeLimit = &q
		}
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDir: ed}})
	}
}

// usage is one pod's usage in a summary.
type usage struct {
	memory, rootfs, logs, inodes uint64
	procs                        uint64
	volumes                      map[string]uint64
}

func podStats(p *v1.Pod, u usage) stats.PodStats {
	procs := u.procs
	ps := stats.PodStats{
		UID: p.UID, Name: p.Name, Namespace: p.Namespace,
		Memory:       &stats.MemoryStats{WorkingSetBytes: u.memory},
		ProcessCount: &procs,
		Containers: []stats.ContainerStats{{
			Name:   p.Spec.Containers[0].Name,
			Memory: &stats.MemoryStats{WorkingSetBytes: u.memory},
			Rootfs: &stats.FsStats{UsedBytes: u.rootfs, InodesUsed: u.inodes},
			Logs:   &stats.FsStats{UsedBytes: u.logs},
		}},
	}
	for name, used := range u.volumes {
		ps.Volumes = append(ps.Volumes, stats.VolumeStats{Name: name, FsStats: stats.FsStats{UsedBytes: used}})
	}
	return ps
}

// node is the node part of a summary.
type node struct {
	memAvail, memCap   uint64
	fsAvail, fsCap     uint64
	inodesFree, inodes uint64
	imgAvail, imgCap   uint64
	maxPID, procs      uint64
	dedicated          bool
	at                 time.Time
}

func healthyNode() node {
	return node{memAvail: 6 * Gi, memCap: 8 * Gi, fsAvail: 50 * Gi, fsCap: 100 * Gi, inodesFree: 900000, inodes: 1000000, imgAvail: 50 * Gi, imgCap: 100 * Gi, maxPID: 32768, procs: 300}
}

func summary(n node, pods ...stats.PodStats) stats.Summary {
	return stats.Summary{
		Node: stats.NodeStats{
			Memory:           &stats.MemoryStats{Time: n.at, AvailableBytes: n.memAvail, WorkingSetBytes: n.memCap - n.memAvail},
			Fs:               &stats.FsStats{Time: n.at, AvailableBytes: n.fsAvail, CapacityBytes: n.fsCap, UsedBytes: n.fsCap - n.fsAvail, InodesFree: n.inodesFree, Inodes: n.inodes},
			ImageFs:          &stats.FsStats{Time: n.at, AvailableBytes: n.imgAvail, CapacityBytes: n.imgCap, InodesFree: n.inodesFree, Inodes: n.inodes},
			DedicatedImageFs: n.dedicated,
			Rlimit:           &stats.RlimitStats{Time: n.at, MaxPID: n.maxPID, NumOfRunningProcesses: n.procs},
		},
		Pods: pods,
	}
}

func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }
