package hoststats

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CFS is a cgroup's CPU bandwidth control counters (cpu.stat): the
// enforcement periods that elapsed while it had runnable tasks, those in
// which it was throttled, and the time it spent throttled.
type CFS struct {
	Periods, ThrottledPeriods uint64
	ThrottledTime             time.Duration
}

// ParseCFS reads the CFS counters of a cpu.stat file: nr_periods,
// nr_throttled, and throttled_usec (cgroup v2, microseconds) or
// throttled_time (v1, nanoseconds). A file without nr_periods (a kernel
// without CFS bandwidth control) is an error.
func ParseCFS(data []byte) (CFS, error) {
	kv, err := ParseKeyValues(data)
	if err != nil {
		return CFS{}, fmt.Errorf("cpu.stat: %w", err)
	}
	periods, ok := kv["nr_periods"]
	if !ok {
		return CFS{}, fmt.Errorf("cpu.stat: no nr_periods")
	}
	out := CFS{Periods: periods, ThrottledPeriods: kv["nr_throttled"]}
	if us, ok := kv["throttled_usec"]; ok {
		out.ThrottledTime = durationOf(us, time.Microsecond)
	} else {
		out.ThrottledTime = durationOf(kv["throttled_time"], time.Nanosecond)
	}
	return out, nil
}

// durationOf is n units as a Duration, saturated at its largest value.
func durationOf(n uint64, unit time.Duration) time.Duration {
	if n > uint64(1<<63-1)/uint64(unit) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(n) * unit
}

// ParseCPUQuota says whether a cgroup's CPU quota file sets a quota: v2's
// cpu.max ("max 100000" sets none, "50000 100000" does) or v1's
// cpu.cfs_quota_us ("-1" sets none). It is what decides, as in cAdvisor,
// whether the cgroup has CFS series at all.
func ParseCPUQuota(data []byte) (bool, error) {
	fields := strings.Fields(string(data))
	if len(fields) == 0 || len(fields) > 2 {
		return false, fmt.Errorf("cpu quota: bad content %q", strings.TrimSpace(string(data)))
	}
	switch q := fields[0]; {
	case q == "max" || q == "-1":
		return false, nil
	default:
		n, err := strconv.ParseUint(q, 10, 64)
		if err != nil {
			return false, fmt.Errorf("cpu quota: %w", err)
		}
		return n != 0, nil
	}
}

// MemoryCache is a cgroup's page cache in bytes from its parsed
// memory.stat: v2's file; v1's total_cache, or cache when the cgroup does
// not account its descendants (memory.use_hierarchy 0), as cAdvisor reads
// them. ok is false when the key is missing.
func MemoryCache(stat map[string]uint64, v2, hierarchy bool) (cache uint64, ok bool) {
	key := "file"
	switch {
	case v2:
	case hierarchy:
		key = "total_cache"
	default:
		key = "cache"
	}
	cache, ok = stat[key]
	return cache, ok
}

// DeviceIO is a cgroup's block I/O on one device (major:minor), as
// cAdvisor tabulates it: Bytes and Ops by operation ("Read", "Write", and
// on cgroup v1 also "Sync", "Async", "Discard", "Total"); nil where the
// cgroup's files say nothing of the device.
type DeviceIO struct {
	Major, Minor uint64
	Bytes, Ops   map[string]uint64
}

// ParseIOStat reads a cgroup v2 io.stat: one line per device,
// "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0". rbytes and
// wbytes are Bytes' Read and Write, rios and wios Ops'; other keys, and
// words that are not key=value, are skipped. The devices come sorted by
// major and minor. A device field that is not major:minor, or a known
// key whose value is not a number, is an error.
func ParseIOStat(data []byte) ([]DeviceIO, error) {
	var out []DeviceIO
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		major, minor, err := parseDevice(fields[0])
		if err != nil {
			return nil, fmt.Errorf("io.stat: %w", err)
		}
		d := DeviceIO{Major: major, Minor: minor}
		for _, f := range fields[1:] {
			key, value, ok := strings.Cut(f, "=")
			if !ok {
				continue
			}
			var table *map[string]uint64
			var op string
			switch key {
			case "rbytes":
				table, op = &d.Bytes, "Read"
			case "wbytes":
				table, op = &d.Bytes, "Write"
			case "rios":
				table, op = &d.Ops, "Read"
			case "wios":
				table, op = &d.Ops, "Write"
			default:
				continue
			}
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("io.stat: %s %s: %w", fields[0], key, err)
			}
			if *table == nil {
				*table = map[string]uint64{}
			}
			(*table)[op] = n
		}
		out = addDevice(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("io.stat: %w", err)
	}
	return sortDevices(out), nil
}

// BlkioFile is which table of DeviceIO a cgroup v1 blkio file fills.
type BlkioFile int

const (
	// BlkioBytes is a blkio.*io_service_bytes* file: DeviceIO.Bytes.
	BlkioBytes BlkioFile = iota
	// BlkioOps is a blkio.*io_serviced* file: DeviceIO.Ops.
	BlkioOps
)

// ParseBlkio reads a cgroup v1 blkio statistics file
// (blkio.throttle.io_service_bytes_recursive, …io_serviced_recursive):
// "8:0 Read 4096" lines, a closing "Total 4096" line that is skipped,
// into the table which of devices, added to the devices given (a device
// not among them is appended). A line of another shape is an error. The
// devices come sorted by major and minor.
func ParseBlkio(devices []DeviceIO, data []byte, which BlkioFile) ([]DeviceIO, error) {
	out := slices.Clone(devices)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
			continue
		case len(fields) == 2 && fields[0] == "Total":
			continue
		case len(fields) != 3:
			return nil, fmt.Errorf("blkio: bad line %q", sc.Text())
		}
		major, minor, err := parseDevice(fields[0])
		if err != nil {
			return nil, fmt.Errorf("blkio: %w", err)
		}
		n, err := strconv.ParseUint(fields[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("blkio: %s %s: %w", fields[0], fields[1], err)
		}
		d := DeviceIO{Major: major, Minor: minor}
		table := map[string]uint64{fields[1]: n}
		if which == BlkioOps {
			d.Ops = table
		} else {
			d.Bytes = table
		}
		out = addDevice(out, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("blkio: %w", err)
	}
	return sortDevices(out), nil
}

// parseDevice reads "major:minor".
func parseDevice(s string) (major, minor uint64, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("device %q is not major:minor", s)
	}
	if major, err = strconv.ParseUint(a, 10, 32); err == nil {
		minor, err = strconv.ParseUint(b, 10, 32)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("device %q: %w", s, err)
	}
	return major, minor, nil
}

// addDevice merges d's tables into the entry of its device, or appends
// it.
func addDevice(devices []DeviceIO, d DeviceIO) []DeviceIO {
	i := slices.IndexFunc(devices, func(e DeviceIO) bool { return e.Major == d.Major && e.Minor == d.Minor })
	if i < 0 {
		return append(devices, DeviceIO{Major: d.Major, Minor: d.Minor, Bytes: merge(nil, d.Bytes), Ops: merge(nil, d.Ops)})
	}
	devices[i].Bytes = merge(devices[i].Bytes, d.Bytes)
	devices[i].Ops = merge(devices[i].Ops, d.Ops)
	return devices
}

// merge copies from's entries into a copy of into (nil when both are).
func merge(into, from map[string]uint64) map[string]uint64 {
	if into == nil && from == nil {
		return nil
	}
	out := make(map[string]uint64, len(into)+len(from))
	maps.Copy(out, into)
	maps.Copy(out, from)
	return out
}

func sortDevices(d []DeviceIO) []DeviceIO {
	slices.SortFunc(d, func(a, b DeviceIO) int { return cmp.Or(cmp.Compare(a.Major, b.Major), cmp.Compare(a.Minor, b.Minor)) })
	return d
}
