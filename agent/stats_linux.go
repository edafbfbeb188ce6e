package agent

import "github.com/kubeletkit/kubeletkit/eviction/stats"

// machineStats measures this Linux machine and the runtime's pods.
func (a *Agent) machineStats() (stats.Provider, error) {
	return stats.NewLinux(stats.LinuxOptions{Runtime: a.rt, Clock: a.clock, RootDir: a.opts.RootDir, PodLogsDir: a.logsDir()})
}
