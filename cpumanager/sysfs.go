package cpumanager

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// Discover reads the machine's CPU topology from a sysfs tree (root "/sys"
// on a host; a directory of the same shape in tests): the online CPUs
// (devices/system/cpu/online), each one's core_id and physical_package_id
// (devices/system/cpu/cpuN/topology), and the NUMA nodes' cpulist
// (devices/system/node/nodeN/cpulist). A machine without NUMA nodes in
// sysfs has one, node 0. Core IDs, which Linux numbers per socket, are
// made unique across sockets, as upstream's cadvisor-based topology does.
func Discover(root string) (*Topology, error) {
	cpuDir := filepath.Join(root, "devices", "system", "cpu")
	online, err := readCPUList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	numa := map[int]int{}
	nodes, _ := filepath.Glob(filepath.Join(root, "devices", "system", "node", "node[0-9]*"))
	for _, n := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(n), "node"))
		if err != nil {
			continue
		}
		set, err := readCPUList(filepath.Join(n, "cpulist"))
		if err != nil {
			return nil, err
		}
		for _, c := range set.List() {
			numa[c] = id
		}
	}
	type coreKey struct{ socket, core int }
	coreIDs := map[coreKey]int{}
	var cpus []CPU
	for _, id := range online.List() {
		dir := filepath.Join(cpuDir, fmt.Sprintf("cpu%d", id), "topology")
		core, err := readInt(filepath.Join(dir, "core_id"))
		if err != nil {
			return nil, err
		}
		socket, err := readInt(filepath.Join(dir, "physical_package_id"))
		if err != nil {
			return nil, err
		}
		k := coreKey{socket, core}
		unique, ok := coreIDs[k]
		if !ok {
			unique = len(coreIDs)
			coreIDs[k] = unique
		}
		cpus = append(cpus, CPU{ID: id, Core: unique, Socket: socket, NUMANode: numa[id]})
	}
	return FromCPUs(cpus)
}

func readCPUList(path string) (cpuset.CPUSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return cpuset.New(), fmt.Errorf("cpumanager: %w", err)
	}
	s, err := cpuset.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return cpuset.New(), fmt.Errorf("cpumanager: %s: %w", path, err)
	}
	return s, nil
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cpumanager: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("cpumanager: %s: %w", path, err)
	}
	return n, nil
}
