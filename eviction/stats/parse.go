package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// parseKeyValues reads "key value" lines (memory.stat) or "Key:   value kB"
// lines (/proc/meminfo): the value is the first number after the key,
// multiplied by 1024 when followed by "kB".
func parseKeyValues(data []byte) (map[string]uint64, error) {
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

// meminfo is what the provider needs from /proc/meminfo, in bytes.
type meminfo struct {
	total, free, inactiveFile uint64
	hasInactiveFile           bool
}

func parseMeminfo(data []byte) (meminfo, error) {
	kv, err := parseKeyValues(data)
	if err != nil {
		return meminfo{}, fmt.Errorf("meminfo: %w", err)
	}
	total, ok := kv["MemTotal"]
	if !ok || total == 0 {
		return meminfo{}, fmt.Errorf("meminfo: no MemTotal")
	}
	free, ok := kv["MemFree"]
	if !ok {
		return meminfo{}, fmt.Errorf("meminfo: no MemFree")
	}
	if free > total {
		return meminfo{}, fmt.Errorf("meminfo: MemFree %d above MemTotal %d", free, total)
	}
	in, has := kv["Inactive(file)"]
	return meminfo{total: total, free: free, inactiveFile: in, hasInactiveFile: has}, nil
}

// parseUint parses a single number file (memory.current, pid_max).
func parseUint(data []byte) (uint64, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, fmt.Errorf("value is %q", s)
	}
	return strconv.ParseUint(s, 10, 64)
}

// parseLoadavgThreads returns the number of threads from /proc/loadavg
// ("0.00 0.01 0.05 2/345 6789": 345).
func parseLoadavgThreads(data []byte) (uint64, error) {
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

// workingSet is usage minus inactive file pages, never below zero.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

// safeName reports whether s can be used as one path element: not empty,
// not "." or "..", no separator or NUL.
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

// safeRelPath reports whether p is a relative path whose elements are all
// safe names.
func safeRelPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if !safeName(el) {
			return false
		}
	}
	return true
}
