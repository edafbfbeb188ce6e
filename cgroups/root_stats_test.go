//go:build root && linux

package cgroups_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/stats"
)

// TestRootCgroupStats reads, with stats.CgroupReader over the Manager's
// PodCgroups, a real pod cgroup made on this machine under a cgroup root
// of the test's own (go test -tags root, as root): the pod's CPU limit
// gives it CFS counters, its container (a child cgroup named by its ID, as
// containerd's with cgroupfs, holding a running process) has none but a
// page cache, and the pod's network namespace is read through that
// process.
func TestRootCgroupStats(t *testing.T) {
	rootName, v2 := privateCgroupRoot(t)
	m, err := cgroups.New(cgroups.Options{CgroupRoot: "/" + rootName, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background(), cgroups.NodeConfig(list("cpu=1,memory=1Gi"))); err != nil {
		t.Fatal(err)
	}
	p := pod("0a1b2c3d-0000-4000-8000-000000000002", "cpu=250m,memory=64Mi/cpu=250m,memory=64Mi")
	if err := m.EnsurePod(p); err != nil {
		t.Fatal(err)
	}
	parent, _ := m.CgroupParent(p)
	const ctr = "c0ffee"
	dirs := []string{filepath.Join(mount, parent, ctr)}
	if !v2 {
		dirs = nil
		for _, h := range []string{"cpu", "memory", "blkio"} {
			if exists(filepath.Join(mount, h, parent)) {
				dirs = append(dirs, filepath.Join(mount, h, parent, ctr))
			}
		}
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	// Gone before the test's cgroups are removed (cleanups run last
	// first).
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	r, err := stats.NewCgroupReader(stats.CgroupReaderOptions{Pods: m})
	if err != nil {
		t.Fatal(err)
	}
	usage := stats.PodUsage{Ref: statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: string(p.UID)},
		Containers: []stats.ContainerUsage{{ID: ctr, Name: "app"}}}
	got := r.CgroupStats(context.Background(), []stats.PodUsage{usage})[p.UID]
	if got == nil {
		t.Fatalf("no stats of the pod cgroup %s", parent)
	}
	if got.Cgroup != parent {
		t.Errorf("Cgroup = %q, want %q", got.Cgroup, parent)
	}
	if got.Pod.CFS == nil {
		t.Error("the pod sets a CPU quota: want its CFS counters")
	}
	if got.Pod.MemoryCacheBytes == nil {
		t.Error("no page cache of the pod")
	}
	c, ok := got.Containers[ctr]
	if !ok {
		t.Fatalf("container cgroup %s not found: %+v", ctr, got)
	}
	if c.CFS != nil {
		t.Errorf("the container sets no CPU quota, yet CFS = %+v", c.CFS)
	}
	if c.MemoryCacheBytes == nil || c.Time.IsZero() || time.Since(c.Time) > time.Minute {
		t.Errorf("container figures = %+v", c)
	}
	if got.Network == nil {
		t.Error("the pod's network namespace was not read through its process")
	}
}
