//go:build linux

package stats_test

import "github.com/kubeletkit/kubeletkit/stats"

// addRealHost adds this machine's host for the benchmarks, on the fake
// clock of the node.
func addRealHost(hosts map[string]stats.Host, n *node) {
	hosts["linux"] = stats.NewLinuxHost(stats.LinuxHostOptions{Clock: n.clk})
}
