package agent

import "github.com/kubeletkit/kubeletkit/internal/hoststats"

// nodePIDs is the node's task limit, which the kubepods cgroup's pids
// limit is, as upstream's internal capacity.
func nodePIDs() (uint64, bool) {
	max, _, err := hoststats.Host{ProcRoot: "/proc"}.PIDs()
	return max, err == nil
}
