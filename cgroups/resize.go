package cgroups

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResizePod brings an existing pod cgroup's CPU shares (weight on v2), CPU
// quota and memory limit to what PodConfig gives the pod now (its
// allocated resources after an in-place resize, the pod-level ones
// included), writing only the values that rise when grow is set and only
// those that fall when it is not. A resize grows the pod's cgroup before
// its containers change and shrinks it after, as upstream orders it, so
// that no container is ever allowed more than its pod. The grow call,
// the first of a resize, refuses (before it writes anything) a memory
// limit that would fall to or below what the pod's cgroup uses now, as
// upstream's resize does ("attempting to set pod memory limit (N) below
// current usage (M)"): the resize waits. A limit the pod no longer sets
// is left as it is, as upstream leaves it; a pod without a cgroup is left
// alone.
func (m *Manager) ResizePod(pod *v1.Pod, grow bool) error {
	fs, n, ok, err := m.podCgroup(pod)
	if err != nil || !ok {
		return err
	}
	want := PodConfig(pod, m.podOptions(pod))
	have, err := fs.readLimits(n)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if grow && want.Memory != nil && *want.Memory > 0 && *want.Memory < have.memory {
		used, known, err := fs.memoryUsage(n)
		if err != nil {
			return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if known && used >= *want.Memory {
			return fmt.Errorf("pod %s/%s: attempting to set pod memory limit (%d) below current usage (%d)",
				pod.Namespace, pod.Name, *want.Memory, used)
		}
	}
	rc := resizeConfig(want, have, grow, fs.v2)
	if rc.CPUShares == nil && rc.CPUQuota == nil && rc.Memory == nil {
		return nil
	}
	if err := m.set(n, rc); err != nil { // with systemd, the unit's properties too
		return fmt.Errorf("pod %s/%s: resize cgroup: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// PodResized reports whether a pod's cgroup has the CPU shares, quota and
// memory limit PodConfig gives the pod (ResizePod would write nothing in
// either direction): upstream's test that a pod-level resize is actuated.
// A pod without a cgroup has nothing to resize: true.
func (m *Manager) PodResized(pod *v1.Pod) (bool, error) {
	fs, n, ok, err := m.podCgroup(pod)
	if err != nil || !ok {
		return err == nil, err
	}
	want := PodConfig(pod, m.podOptions(pod))
	have, err := fs.readLimits(n)
	if err != nil {
		return false, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	for _, grow := range []bool{true, false} {
		if rc := resizeConfig(want, have, grow, fs.v2); rc.CPUShares != nil || rc.CPUQuota != nil || rc.Memory != nil {
			return false, nil
		}
	}
	return true, nil
}

// PodResources reads what a pod's cgroup runs with, in a pod's units, as
// upstream's pod status reads it for a running pod's pod-level resources:
// the CPU request from the shares (on v2 from the weight, with upstream's
// conversion, which reads 1 CPU's weight as 975m), the CPU limit from the
// quota over the period, the memory limit; a value the cgroup does not
// limit is left out. A pod without a cgroup gives nil.
func (m *Manager) PodResources(pod *v1.Pod) (*v1.ResourceRequirements, error) {
	fs, n, ok, err := m.podCgroup(pod)
	if err != nil || !ok {
		return nil, err
	}
	have, err := fs.readLimits(n)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r := &v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	shares := have.shares
	if fs.v2 {
		// Upstream's reading of a weight, which the status reports.
		shares = (have.weight-1)*(MaxShares-MinShares)/9999 + MinShares
	}
	if milli := sharesToMilliCPU(shares); milli > 0 {
		r.Requests[v1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	if have.quota != math.MaxInt64 && have.period > 0 {
		if milli := have.quota * 1000 / have.period; milli > 0 {
			r.Limits[v1.ResourceCPU] = *resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if have.memory != math.MaxInt64 && have.memory > 0 {
		r.Limits[v1.ResourceMemory] = *resource.NewQuantity(have.memory, resource.BinarySI)
	}
	return r, nil
}

// sharesToMilliCPU is the CPU request, in millicores, that shares stand
// for (rounded up, as upstream's); 0 below MinShares.
func sharesToMilliCPU(shares int64) int64 {
	if shares < MinShares {
		return 0
	}
	return (shares*1000 + SharesPerCPU - 1) / SharesPerCPU
}

// podCgroup is the started driver and a pod's cgroup name, ok false when
// the pod has no cgroup.
func (m *Manager) podCgroup(pod *v1.Pod) (*fsDriver, Name, bool, error) {
	fs, err := m.started()
	if err != nil {
		return nil, Name{}, false, err
	}
	n, err := m.PodName(pod)
	if err != nil {
		return nil, Name{}, false, err
	}
	return fs, n, fs.exists(n), nil
}

// resizeConfig is what of want a resize writes over have: the values that
// rise with grow, those that fall without. On v2 the shares are compared
// as the weights they are written as, which map many shares to one.
func resizeConfig(want ResourceConfig, have limits, grow, v2 bool) ResourceConfig {
	moves := func(w, h int64) bool {
		if grow {
			return w > h
		}
		return w < h
	}
	var rc ResourceConfig
	wantShares, haveShares := int64(0), have.shares
	if want.CPUShares != nil {
		wantShares = int64(*want.CPUShares)
	}
	if v2 {
		wantShares, haveShares = int64(SharesToWeight(uint64(wantShares))), int64(SharesToWeight(uint64(haveShares)))
	}
	if want.CPUShares != nil && moves(wantShares, haveShares) {
		rc.CPUShares = want.CPUShares
	}
	if want.CPUQuota != nil && want.CPUPeriod != nil && moves(unlimitedIfNotPositive(*want.CPUQuota), have.quota) {
		rc.CPUQuota, rc.CPUPeriod = want.CPUQuota, want.CPUPeriod
	}
	if want.Memory != nil && *want.Memory > 0 && moves(*want.Memory, have.memory) {
		rc.Memory = want.Memory
	}
	return rc
}

// limits are a cgroup's CPU shares (v2's weight mapped back to the shares
// it stands for, at its smallest), CFS quota and period (µs; quota
// unlimited as MaxInt64) and memory limit (bytes; unlimited as MaxInt64).
type limits struct {
	shares, quota, period, memory int64
	weight                        int64 // v2's cpu.weight as read
}

func unlimitedIfNotPositive(v int64) int64 {
	if v <= 0 {
		return math.MaxInt64
	}
	return v
}

// readLimits reads a cgroup's CPU and memory limits.
func (d *fsDriver) readLimits(n Name) (limits, error) {
	dirs := d.dirs(n)
	// in is the cgroup's directory in the hierarchy at h (v1).
	in := func(h string) string {
		for _, dir := range dirs {
			if strings.HasPrefix(dir, h+string(filepath.Separator)) {
				return dir
			}
		}
		return filepath.Join(h, "missing")
	}
	read := func(dir, file string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return "", fmt.Errorf("read %s: %w", file, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	number := func(s string) (int64, error) {
		if s == "max" {
			return math.MaxInt64, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse %q: %w", s, err)
		}
		return v, nil
	}
	var l limits
	if d.v2 {
		dir := dirs[0]
		w, err := read(dir, "cpu.weight")
		if err != nil {
			return l, err
		}
		weight, err := number(w)
		if err != nil {
			return l, err
		}
		l.shares, l.weight = weightToShares(weight), weight
		cpuMax, err := read(dir, "cpu.max")
		if err != nil {
			return l, err
		}
		f := strings.Fields(cpuMax + " ")
		if l.quota, err = number(f[0]); err != nil {
			return l, err
		}
		if len(f) > 1 {
			if l.period, err = number(f[1]); err != nil {
				return l, err
			}
		}
		mem, err := read(dir, "memory.max")
		if err != nil {
			return l, err
		}
		l.memory, err = number(mem)
		return l, err
	}
	cpu, memory := in(d.subsystems["cpu"]), in(d.subsystems["memory"])
	for _, f := range []struct {
		dir, file string
		into      *int64
	}{{cpu, "cpu.shares", &l.shares}, {cpu, "cpu.cfs_quota_us", &l.quota}, {memory, "memory.limit_in_bytes", &l.memory}} {
		s, err := read(f.dir, f.file)
		if err != nil {
			return l, err
		}
		if *f.into, err = number(s); err != nil {
			return l, err
		}
	}
	l.quota = unlimitedIfNotPositive(l.quota)
	if p, err := read(cpu, "cpu.cfs_period_us"); err == nil { // only a limit needs it
		l.period, _ = number(p)
	}
	return l, nil
}

// memoryUsage reads what a cgroup's memory use is now (memory.current on
// v2, memory.usage_in_bytes on v1); known is false when the file is not
// there, which a kernel's cgroup always has and only a fake cgroup tree
// lacks.
func (d *fsDriver) memoryUsage(n Name) (used int64, known bool, err error) {
	dir, file := d.dirs(n)[0], "memory.current"
	if !d.v2 {
		dir, file = filepath.Join(d.subsystems["memory"], d.rel(n)), "memory.usage_in_bytes"
	}
	b, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", file, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("parse %s: %w", file, err)
	}
	return v, true, nil
}

// weightToShares is the smallest cpu.shares SharesToWeight maps to weight.
func weightToShares(weight int64) int64 {
	if weight <= 1 {
		return MinShares
	}
	// SharesToWeight: w = 1 + (s-2)*9999/262142; the smallest s giving w.
	return MinShares + ((weight-1)*(MaxShares-MinShares)+9998)/9999
}
