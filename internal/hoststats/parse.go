package hoststats

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseKeyValues reads "key value" lines (memory.stat, cpu.stat) or
// "Key:   value kB" lines (/proc/meminfo): the value is the first number
// after the key, multiplied by 1024 when followed by "kB".
func ParseKeyValues(data []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		key := strings.TrimSuffix(fields[0], ":")
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse %q: %w", sc.Text(), err)
		}
		if len(fields) > 2 && fields[2] == "kB" {
			v *= 1024
		}
		out[key] = v
	}
	return out, sc.Err()
}

// Meminfo is what the node's measurers need from /proc/meminfo, in bytes.
type Meminfo struct {
	Total, Free, InactiveFile uint64
	// HasInactiveFile says whether Inactive(file) was there.
	HasInactiveFile bool
}

// ParseMeminfo parses /proc/meminfo. MemTotal and MemFree are required.
func ParseMeminfo(data []byte) (Meminfo, error) {
	kv, err := ParseKeyValues(data)
	if err != nil {
		return Meminfo{}, fmt.Errorf("meminfo: %w", err)
	}
	total, ok := kv["MemTotal"]
	if !ok || total == 0 {
		return Meminfo{}, fmt.Errorf("meminfo: no MemTotal")
	}
	free, ok := kv["MemFree"]
	if !ok {
		return Meminfo{}, fmt.Errorf("meminfo: no MemFree")
	}
	if free > total {
		return Meminfo{}, fmt.Errorf("meminfo: MemFree %d above MemTotal %d", free, total)
	}
	in, has := kv["Inactive(file)"]
	return Meminfo{Total: total, Free: free, InactiveFile: in, HasInactiveFile: has}, nil
}

// ParseUint parses a file holding one number (memory.current, pid_max).
// "max" (a cgroup v2 limit that is not set) is an error.
func ParseUint(data []byte) (uint64, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, fmt.Errorf("value is %q", s)
	}
	return strconv.ParseUint(s, 10, 64)
}

// ParseLoadavgThreads returns the number of threads from /proc/loadavg
// ("0.00 0.01 0.05 2/345 6789": 345).
func ParseLoadavgThreads(data []byte) (uint64, error) {
	fields := strings.Fields(string(data))
	if len(fields) < 4 {
		return 0, fmt.Errorf("loadavg: want 5 fields, got %q", strings.TrimSpace(string(data)))
	}
	_, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return 0, fmt.Errorf("loadavg: bad field %q", fields[3])
	}
	n, err := strconv.ParseUint(total, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("loadavg: %w", err)
	}
	return n, nil
}

// userHZ is the unit of the CPU times of /proc/stat: USER_HZ, which the
// kernel fixes at 100 for user space on every architecture.
const userHZ = 100

// ProcStat is what the node's measurers need from /proc/stat.
type ProcStat struct {
	// BusyNanoseconds is the CPU time spent on every CPU in anything but
	// idle and iowait: user, nice, system, irq, softirq and steal (guest
	// time is already in user and nice).
	BusyNanoseconds uint64
	// BootTime is the btime line: when the machine booted, to the second.
	BootTime time.Time
}

// ParseProcStat parses /proc/stat: the aggregate "cpu" line and "btime".
// Both are required.
func ParseProcStat(data []byte) (ProcStat, error) {
	var out ProcStat
	var haveCPU, haveBoot bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "cpu":
			if len(fields) < 5 {
				return ProcStat{}, fmt.Errorf("proc stat: short cpu line %q", sc.Text())
			}
			var ticks uint64
			// user nice system idle iowait irq softirq steal: skip idle (4) and iowait (5).
			for i, f := range fields[1:min(len(fields), 9)] {
				if i == 3 || i == 4 {
					continue
				}
				v, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					return ProcStat{}, fmt.Errorf("proc stat: cpu line: %w", err)
				}
				ticks += v
			}
			out.BusyNanoseconds = ticks * uint64(time.Second/userHZ)
			haveCPU = true
		case "btime":
			sec, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return ProcStat{}, fmt.Errorf("proc stat: btime: %w", err)
			}
			out.BootTime = time.Unix(sec, 0)
			haveBoot = true
		}
	}
	if err := sc.Err(); err != nil {
		return ProcStat{}, fmt.Errorf("proc stat: %w", err)
	}
	if !haveCPU {
		return ProcStat{}, fmt.Errorf("proc stat: no cpu line")
	}
	if !haveBoot {
		return ProcStat{}, fmt.Errorf("proc stat: no btime line")
	}
	return out, nil
}

// Interface is one network interface's counters from /proc/net/dev.
type Interface struct {
	Name                                 string
	RxBytes, RxErrors, TxBytes, TxErrors uint64
	// RxPackets, RxDropped, TxPackets and TxDropped are the packets
	// received and transmitted and those dropped each way.
	RxPackets, RxDropped, TxPackets, TxDropped uint64
}

// ignoredInterfaces are the name prefixes cAdvisor leaves out of a
// container's (and so the node's) network stats: loopback, the host ends of
// pod veth pairs, and bridges of other container engines.
var ignoredInterfaces = []string{"lo", "veth", "docker", "nerdctl"}

// Ignored reports whether an interface is left out of the node's network
// stats, as upstream leaves it out.
func Ignored(name string) bool {
	name = strings.ToLower(name)
	for _, p := range ignoredInterfaces {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ParseNetDev parses /proc/net/dev: two header lines, then one line per
// interface with 8 receive and 8 transmit counters. Interfaces that Ignored
// names are left out. A malformed line makes the whole file an error, since
// its columns cannot be trusted.
func ParseNetDev(data []byte) ([]Interface, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for range 2 {
		if !sc.Scan() {
			return nil, fmt.Errorf("net dev: no header: %w", sc.Err())
		}
	}
	var out []Interface
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if !ok || len(fields) != 16 {
			return nil, fmt.Errorf("net dev: bad line %q", sc.Text())
		}
		name = strings.TrimSpace(name)
		if Ignored(name) {
			continue
		}
		var v [16]uint64
		for i, f := range fields {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("net dev: %s: %w", name, err)
			}
			v[i] = n
		}
		// Receive: bytes packets errs drop ...; transmit from column 8
		// likewise.
		out = append(out, Interface{Name: name, RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[8], TxPackets: v[9], TxErrors: v[10], TxDropped: v[11]})
	}
	return out, sc.Err()
}

// WorkingSet is usage minus inactive file pages, never below zero: the
// memory that cannot be reclaimed without swapping.
func WorkingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

// SafeName reports whether s can be used as one path element: not empty,
// not "." or "..", no separator or NUL.
func SafeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

// SafeRelPath reports whether p is a relative path whose elements are all
// safe names.
func SafeRelPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if !SafeName(el) {
			return false
		}
	}
	return true
}

// PressureData is one line of a pressure stall information file: the
// share of wall time, in percent, in which tasks stalled on the resource,
// averaged over 10, 60 and 300 seconds, and the total stall time in
// microseconds, as the kernel counts it.
type PressureData struct {
	Avg10, Avg60, Avg300 float64
	Total                uint64
}

// Pressure is a pressure file (/proc/pressure/cpu, a cgroup v2
// memory.pressure): Some, the time at least one task stalled; Full, the
// time all non-idle tasks stalled at once (zero where the kernel writes no
// "full" line, the CPU's before Linux 5.13).
type Pressure struct {
	Some, Full PressureData
}

// ParsePressure reads a pressure file: lines "some avg10=0.12 avg60=0.05
// avg300=0.01 total=12345" and "full …". Lines of other kinds and keys it
// does not know are skipped; a file without a "some" line, a value that is
// not a number, or an average that is negative or not finite is an error.
func ParsePressure(data []byte) (Pressure, error) {
	var p Pressure
	var some bool
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var d *PressureData
		switch fields[0] {
		case "some":
			d, some = &p.Some, true
		case "full":
			d = &p.Full
		default:
			continue
		}
		for _, f := range fields[1:] {
			key, value, ok := strings.Cut(f, "=")
			if !ok {
				return Pressure{}, fmt.Errorf("parse pressure %q: %q is not key=value", strings.TrimSpace(line), f)
			}
			var avg *float64
			switch key {
			case "avg10":
				avg = &d.Avg10
			case "avg60":
				avg = &d.Avg60
			case "avg300":
				avg = &d.Avg300
			case "total":
				n, err := strconv.ParseUint(value, 10, 64)
				if err != nil {
					return Pressure{}, fmt.Errorf("parse pressure %q: total: %w", strings.TrimSpace(line), err)
				}
				d.Total = n
				continue
			default:
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err == nil && (v < 0 || math.IsInf(v, 0) || math.IsNaN(v)) {
				err = fmt.Errorf("%q is not a share of time", value)
			}
			if err != nil {
				return Pressure{}, fmt.Errorf("parse pressure %q: %s: %w", strings.TrimSpace(line), key, err)
			}
			*avg = v
		}
	}
	if !some {
		return Pressure{}, fmt.Errorf("parse pressure: no \"some\" line")
	}
	return p, nil
}
