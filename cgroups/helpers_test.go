package cgroups_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// fakeV1 makes a directory tree shaped as a cgroup v1 mount: one directory
// per hierarchy (cpu and cpuacct as links to cpu,cpuacct), each with its
// root's cgroup.procs, the hybrid unified directory, the root cpuset's CPUs
// and memory nodes.
func fakeV1(t testing.TB) string {
	root := t.TempDir()
	for _, h := range []string{"cpu,cpuacct", "cpuset", "memory", "pids", "systemd", "unified"} {
		if err := os.Mkdir(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(root, h, "cgroup.procs"), "")
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "cpuset", "cpuset.cpus"), "0-1\n")
	write(t, filepath.Join(root, "cpuset", "cpuset.mems"), "0\n")
	return root
}

// fakeV2 makes a directory tree shaped as a cgroup v2 mount.
func fakeV2(t testing.TB) string {
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	return root
}

func write(t testing.TB, file, s string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// read returns a file's content, trimmed, or "<none>".
func read(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		return "<none>"
	}
	return strings.TrimSpace(string(b))
}

func exists(file string) bool {
	_, err := os.Stat(file)
	return err == nil
}

// pod returns a pod of one container per list of requests and limits
// ("cpu=500m,memory=64Mi/cpu=1,memory=128Mi": requests/limits).
func pod(uid string, containers ...string) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p-"+uid, "default", types.UID(uid)
	for i, c := range containers {
		reqs, lims, _ := strings.Cut(c, "/")
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: string(rune('a' + i)),
			Resources: v1.ResourceRequirements{Requests: list(reqs), Limits: list(lims)}})
	}
	return p
}

func list(s string) v1.ResourceList {
	if s == "" {
		return nil
	}
	out := v1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[v1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}
