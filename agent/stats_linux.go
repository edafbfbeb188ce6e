package agent

import "github.com/kubeletkit/kubeletkit/eviction/stats"

// machineStats measures this Linux machine and the runtime's pods.
func (b *blocks) machineStats() (stats.Provider, error) {
	return stats.NewLinux(stats.LinuxOptions{Runtime: b.caps, Clock: b.clock, RootDir: b.opts.RootDir, PodLogsDir: b.opts.logsDir()})
}
