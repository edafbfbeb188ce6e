//go:build containerd

package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

// cgroupRead is a shell line that prints a container's own cgroup file on
// cgroup v1 (the controller's directory) or v2 (the unified one).
func cgroupRead(v1Path, v2Path string) []string {
	return []string{"sh", "-c", "cat /sys/fs/cgroup/" + v1Path + " 2>/dev/null || cat /sys/fs/cgroup/" + v2Path}
}

// The static CPU manager on containerd, on this machine's CPUs with CPU 0
// reserved: a Guaranteed pod's container runs on CPU 1 alone without a CFS
// quota, from its creation; a Burstable container started before it
// leaves CPU 1 at the next reconcile, through an update of its cpuset
// alone, and keeps its CPU limit.
func TestContainerdStaticCPUManager(t *testing.T) {
	c, image := ctrdtest.Client(t)
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	n := startNodeWith(t, agent.Options{Runtime: c, RootDir: filepath.Join(dir, "root"), Sources: agent.SourceOptions{ManifestPath: manifests},
		Resources: agent.ResourceOptions{CPUManagerPolicy: "static", ReservedSystemCPUs: cpuset.New(0), CPUManagerReconcilePeriod: 200 * time.Millisecond}})
	pod := func(name, cpu, limit string) string {
		return ctrdManifest(`apiVersion: v1
kind: Pod
metadata: {name: `+name+`}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    resources:
      requests: {cpu: "`+cpu+`", memory: 32Mi}
      limits: {cpu: "`+limit+`", memory: 32Mi}
`, image, "cpus")
	}
	exec := func(p v1.Pod, cmd []string) string {
		t.Helper()
		id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.ExecSync(ctx, id, cmd, 10*time.Second)
		require.NoError(t, err)
		require.Zero(t, res.GetExitCode(), string(res.GetStderr()))
		return strings.TrimSpace(string(res.GetStdout()))
	}
	running := func(p v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID != ""
	}

	n.write("web.yaml", pod("web", "100m", "500m"))
	web := n.waitPod("cpus-web-node1", "Running", running)
	assert.Equal(t, "0-1", exec(web, cgroupRead("cpuset/cpuset.cpus", "cpuset.cpus")), "the shared pool: every CPU")

	n.write("db.yaml", pod("db", "1", "1"))
	db := n.waitPod("cpus-db-node1", "Running", running)
	assert.Equal(t, "1", exec(db, cgroupRead("cpuset/cpuset.cpus", "cpuset.cpus")), "CPU 1 of its own")
	quota := exec(db, cgroupRead("cpu/cpu.cfs_quota_us", "cpu.max"))
	assert.True(t, quota == "-1" || strings.HasPrefix(quota, "max"), "no CFS quota: %q", quota)

	deadline := time.Now().Add(20 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		if got = exec(web, cgroupRead("cpuset/cpuset.cpus", "cpuset.cpus")); got == "0" {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for an event
	}
	assert.Equal(t, "0", got, "the shared pool without CPU 1, written by the reconcile")
	limit := exec(web, cgroupRead("cpu/cpu.cfs_quota_us", "cpu.max"))
	assert.True(t, limit == "50000" || strings.HasPrefix(limit, "50000 "), "the CPU limit kept: %q", limit)
}
