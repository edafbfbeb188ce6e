package cgroups

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ResizePod brings an existing pod cgroup's CPU shares (weight on v2), CPU
// quota and memory limit to what PodConfig gives the pod now (its
// allocated resources after an in-place resize), writing only the values
// that rise when grow is set and only those that fall when it is not. A
// resize grows the pod's cgroup before its containers change and shrinks
// it after, as upstream orders it, so that no container is ever allowed
// more than its pod. A limit the pod no longer sets is left as it is, as
// upstream leaves it; a pod without a cgroup is left alone.
func (m *Manager) ResizePod(pod *v1.Pod, grow bool) error {
	fs, err := m.started()
	if err != nil {
		return err
	}
	n, err := m.PodName(pod)
	if err != nil {
		return err
	}
	if !fs.exists(n) {
		return nil
	}
	want := PodConfig(pod, m.opts.Pod)
	have, err := fs.readLimits(n)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	moves := func(w, h int64) bool {
		if grow {
			return w > h
		}
		return w < h
	}
	var rc ResourceConfig
	if want.CPUShares != nil && moves(int64(*want.CPUShares), have.shares) {
		rc.CPUShares = want.CPUShares
	}
	if want.CPUQuota != nil && want.CPUPeriod != nil && moves(unlimitedIfNotPositive(*want.CPUQuota), have.quota) {
		rc.CPUQuota, rc.CPUPeriod = want.CPUQuota, want.CPUPeriod
	}
	if want.Memory != nil && *want.Memory > 0 && moves(*want.Memory, have.memory) {
		rc.Memory = want.Memory
	}
	if rc.CPUShares == nil && rc.CPUQuota == nil && rc.Memory == nil {
		return nil
	}
	if err := m.set(n, rc); err != nil { // with systemd, the unit's properties too
		return fmt.Errorf("pod %s/%s: resize cgroup: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// limits are a cgroup's CPU shares (v2's weight mapped back to the shares
// it stands for, at its smallest), CFS quota (µs; unlimited as MaxInt64)
// and memory limit (bytes; unlimited as MaxInt64).
type limits struct {
	shares, quota, memory int64
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
		l.shares = weightToShares(weight)
		cpuMax, err := read(dir, "cpu.max")
		if err != nil {
			return l, err
		}
		if l.quota, err = number(strings.Fields(cpuMax + " ")[0]); err != nil {
			return l, err
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
	return l, nil
}

// weightToShares is the smallest cpu.shares SharesToWeight maps to weight.
func weightToShares(weight int64) int64 {
	if weight <= 1 {
		return MinShares
	}
	// SharesToWeight: w = 1 + (s-2)*9999/262142; the smallest s giving w.
	return MinShares + ((weight-1)*(MaxShares-MinShares)+9998)/9999
}
