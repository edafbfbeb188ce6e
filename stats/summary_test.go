package stats_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/stats"
)

var update = flag.Bool("update", false, "rewrite the golden summaries in testdata")

// scenario builds the node the golden summaries describe:
//
//   - default/web: containers app (restarted once: attempt 0 exited) and
//     sidecar, scripted by usage rules; an exited init container; logs
//     for both and a pod-level file; an emptyDir on disk and one in
//     memory, a configMap and a secret; an etc-hosts file.
//   - kube-system/dns: one container no usage rule scripts.
//   - default/old: a stopped sandbox, not measured.
func scenario(n *node) {
	ctx := context.Background()
	web, ids := n.runPod("default", "web", "app", "sidecar")
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}}
	require.NoError(n.t, n.rt.StopContainer(ctx, ids[0], 0))
	n.start(web, cfg, "app", 1)
	initID := n.start(web, cfg, "init", 0)
	require.NoError(n.t, n.rt.StopContainer(ctx, initID, 0))
	n.runPod("kube-system", "dns", "dns")
	old, _ := n.runPod("default", "old", "app")
	require.NoError(n.t, n.rt.StopPodSandbox(ctx, old))

	logs := n.podLogs("default", "web")
	n.write(filepath.Join(logs, "app", "0.log"), 1000)
	n.write(filepath.Join(logs, "app", "1.log"), 300)
	n.write(filepath.Join(logs, "sidecar", "0.log"), 500)
	n.write(filepath.Join(logs, "pod.log"), 7)
	n.write(filepath.Join(n.volume("uid-web", "kubernetes.io~empty-dir", "cache"), "data"), 4096)
	n.write(filepath.Join(n.volume("uid-web", "kubernetes.io~empty-dir", "mem"), "data"), 100)
	n.write(filepath.Join(n.volume("uid-web", "kubernetes.io~configmap", "cfg"), "key"), 10)
	n.write(filepath.Join(n.volume("uid-web", "kubernetes.io~secret", "token"), "token"), 20)
	n.write(filepath.Join(n.rootDir, "pods", "uid-web", "etc-hosts"), 64)
	// The memory emptyDir is a tmpfs of its own.
	n.host.Filesystems[n.volume("uid-web", "kubernetes.io~empty-dir", "mem")] = stats.FsInfo{Device: 9, CapacityBytes: 1 << 30, AvailableBytes: 1 << 30}
}

// TestSummaryGolden pins the full and the CPU-and-memory summaries of the
// scenario, after two samples 10s apart, against testdata/*.json (run with
// -update to rewrite them after a deliberate change).
func TestSummaryGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		only bool
	}{{"summary-full.json", false}, {"summary-cpu-memory.json", true}} {
		t.Run(tc.file, func(t *testing.T) {
			n := newNode(t)
			scenario(n)
			p := n.provider(stats.Options{PodsCgroup: podsCgroup, KubeletCgroup: kubeletCg, RuntimeCgroup: "/system.slice/containerd.service"})
			_, err := p.Summary(context.Background(), tc.only)
			require.NoError(t, err)
			n.clk.Step(10 * time.Second)
			s, err := p.Summary(context.Background(), tc.only)
			require.NoError(t, err)
			got, err := json.MarshalIndent(s, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			path := filepath.Join("testdata", tc.file)
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		})
	}
}
