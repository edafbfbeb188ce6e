//go:build !linux

package stats_test

import "github.com/kubeletkit/kubeletkit/stats"

// addRealHost: there is no real host but on Linux.
func addRealHost(map[string]stats.Host, *node) {}
