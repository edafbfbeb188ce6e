package topologymanager

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadDistances reads the NUMA distances of the given nodes from a sysfs
// tree (root "/sys" on a host): devices/system/node/nodeN/distance, one
// distance per node of the machine in node order, as Options.Distances
// wants them for prefer-closest-numa-nodes.
func ReadDistances(root string, nodes []int) (map[int][]int, error) {
	out := make(map[int][]int, len(nodes))
	for _, n := range nodes {
		path := filepath.Join(root, "devices", "system", "node", fmt.Sprintf("node%d", n), "distance")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("topologymanager: NUMA distances: %w", err)
		}
		for _, f := range strings.Fields(string(b)) {
			d, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("topologymanager: NUMA distances: %s: %w", path, err)
			}
			out[n] = append(out[n], d)
		}
	}
	return out, nil
}
