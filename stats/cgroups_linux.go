//go:build linux

package stats

import (
	"path"

	"github.com/kubeletkit/kubeletkit/internal/hoststats"
)

// readPod reads one pod's cgroup (rel under the mount), its containers'
// and its network namespace; nil when the pod cgroup is not there.
func (r *CgroupReader) readPod(cg, rel string, p PodUsage) *PodCgroupStats {
	h := hoststats.Host{ProcRoot: r.o.ProcRoot, CgroupRoot: r.o.CgroupRoot, SysRoot: r.o.SysRoot}
	children, err := h.CgroupChildren(rel)
	if err != nil {
		r.log.Debug("Pod cgroup not read", "pod", p.Ref.Namespace+"/"+p.Ref.Name, "cgroup", cg, "err", err)
		return nil
	}
	out := &PodCgroupStats{Cgroup: cg, Pod: r.readCgroup(h, rel)}
	for _, c := range p.Containers {
		if child, ok := ContainerCgroup(children, c.ID); ok {
			if out.Containers == nil {
				out.Containers = map[string]CgroupStats{}
			}
			out.Containers[c.ID] = r.readCgroup(h, path.Join(rel, child))
		}
	}
	out.Network = r.readNetwork(h, rel, children, p.SandboxID)
	return out
}

// readCgroup reads what it can of one cgroup.
func (r *CgroupReader) readCgroup(h hoststats.Host, rel string) CgroupStats {
	out := CgroupStats{Time: r.o.Clock.Now()}
	switch cfs, ok, err := h.CgroupCFS(rel); {
	case err != nil:
		r.log.Debug("CFS counters not read", "cgroup", rel, "err", err)
	case ok:
		out.CFS = &CFSStats{Periods: cfs.Periods, ThrottledPeriods: cfs.ThrottledPeriods, ThrottledTime: cfs.ThrottledTime}
	}
	if cache, err := h.CgroupMemoryCache(rel); err == nil {
		out.MemoryCacheBytes = &cache
	} else {
		r.log.Debug("Page cache not read", "cgroup", rel, "err", err)
	}
	devices, err := h.CgroupIO(rel)
	if err != nil {
		r.log.Debug("Block I/O not read", "cgroup", rel, "err", err)
	}
	for _, d := range devices {
		out.IO = append(out.IO, DeviceIO{Device: h.BlockDevice(d.Major, d.Minor), Major: d.Major, Minor: d.Minor, Bytes: d.Bytes, Ops: d.Ops})
	}
	return out
}

// readNetwork reads the pod's network namespace through the first
// process found in the pod cgroup or its children (procsOrder).
func (r *CgroupReader) readNetwork(h hoststats.Host, rel string, children []string, sandboxID string) *PodNetworkStats {
	dirs := []string{rel}
	for _, c := range procsOrder(children, sandboxID) {
		dirs = append(dirs, path.Join(rel, c))
	}
	for _, dir := range dirs {
		pids, err := h.CgroupProcs(dir)
		if err != nil {
			continue
		}
		for _, pid := range pids {
			ifs, err := h.ProcNetDev(pid)
			if err != nil {
				// Gone since listed, or not ours to read: the next.
				r.log.Debug("Network namespace not read", "cgroup", dir, "pid", pid, "err", err)
				continue
			}
			out := &PodNetworkStats{Time: r.o.Clock.Now(), Interfaces: make([]InterfaceStats, 0, len(ifs))}
			for _, i := range ifs {
				out.Interfaces = append(out.Interfaces, InterfaceStats{Name: i.Name,
					RxBytes: i.RxBytes, RxPackets: i.RxPackets, RxErrors: i.RxErrors, RxDropped: i.RxDropped,
					TxBytes: i.TxBytes, TxPackets: i.TxPackets, TxErrors: i.TxErrors, TxDropped: i.TxDropped})
			}
			return out
		}
	}
	return nil
}
