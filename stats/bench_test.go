package stats_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeletkit/kubeletkit/stats"
)

// BenchmarkSummary110Pods measures one Summary of a full node (110 pods,
// kubelet's default maxPods, with 2 running containers each, a log file per
// container and an emptyDir per pod) on the fake runtime, full and
// CPU-and-memory, with the scripted host (the provider's own cost) and,
// on Linux, with the real host reading this machine's procfs and cgroups.
// Volumes are walked at the first Summary and then once a minute or two,
// so the loop measures what a Summary costs between walks, as in
// production.
func BenchmarkSummary110Pods(b *testing.B) {
	n := newNode(b)
	for i := range 110 {
		name := fmt.Sprintf("pod-%03d", i)
		n.runPod("default", name, "app", "sidecar")
		logs := n.podLogs("default", name)
		n.write(filepath.Join(logs, "app", "0.log"), 4096)
		n.write(filepath.Join(logs, "sidecar", "0.log"), 1024)
		n.write(filepath.Join(n.volume("uid-"+name, "kubernetes.io~empty-dir", "cache"), "data"), 8192)
	}
	hosts := map[string]stats.Host{"scripted": n.host}
	addRealHost(hosts, n)
	for _, hostName := range []string{"scripted", "linux"} {
		host, ok := hosts[hostName]
		if !ok {
			continue
		}
		for _, mode := range []struct {
			name string
			only bool
		}{{"full", false}, {"cpu-memory", true}} {
			b.Run(fmt.Sprintf("host=%s/%s", hostName, mode.name), func(b *testing.B) {
				p, err := stats.New(stats.Options{
					NodeName: "node-1", Runtime: n.rt, Host: host, Clock: n.clk,
					RootDir: n.rootDir, PodLogsDir: n.logsDir, PodsCgroup: benchPodsCgroup(hostName),
				})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if _, err := p.Summary(ctx, mode.only); err != nil { // the first volume walk
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					n.clk.Step(time.Second)
					s, err := p.Summary(ctx, mode.only)
					if err != nil {
						b.Fatal(err)
					}
					if len(s.Pods) != 110 {
						b.Fatalf("%d pods", len(s.Pods))
					}
				}
			})
		}
	}
}

// benchPodsCgroup is the pods cgroup of the scripted host; the real host's
// cgroup layout is unknown, so it has none.
func benchPodsCgroup(host string) string {
	if host == "scripted" {
		return podsCgroup
	}
	return ""
}
