package cgroups_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// A Burstable pod's cgroup on a cgroup v1 node, here a directory tree
// standing for /sys/fs/cgroup.
func Example() {
	root, _ := os.MkdirTemp("", "cgroups-example")
	defer os.RemoveAll(root)
	for _, h := range []string{"cpu", "memory"} {
		_ = os.Mkdir(filepath.Join(root, h), 0o755)
		_ = os.WriteFile(filepath.Join(root, h, "cgroup.procs"), nil, 0o644) // a hierarchy's root
	}
	m, err := cgroups.New(cgroups.Options{Root: root, Remove: os.RemoveAll})
	if err != nil {
		panic(err)
	}
	allocatable := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}
	if err := m.Start(context.Background(), cgroups.NodeConfig(allocatable)); err != nil {
		panic(err)
	}

	pod := &v1.Pod{}
	pod.UID = "6f1b0e0e-4d3c-4c2a-9a51-0c7f4b7a9e10"
	pod.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("256Mi")},
	}}}
	if err := m.EnsurePod(pod); err != nil {
		panic(err)
	}
	parent, _ := m.CgroupParent(pod)
	fmt.Println("cgroup parent:", parent)
	for _, f := range []string{"cpu/kubepods/cpu.shares", "memory/kubepods/memory.limit_in_bytes",
		"cpu" + parent + "/cpu.shares", "cpu" + parent + "/cpu.cfs_quota_us", "memory" + parent + "/memory.limit_in_bytes"} {
		b, _ := os.ReadFile(filepath.Join(root, f))
		fmt.Printf("%s = %s\n", f, b)
	}
	// Output:
	// cgroup parent: /kubepods/burstable/pod6f1b0e0e-4d3c-4c2a-9a51-0c7f4b7a9e10
	// cpu/kubepods/cpu.shares = 4096
	// memory/kubepods/memory.limit_in_bytes = 8589934592
	// cpu/kubepods/burstable/pod6f1b0e0e-4d3c-4c2a-9a51-0c7f4b7a9e10/cpu.shares = 256
	// cpu/kubepods/burstable/pod6f1b0e0e-4d3c-4c2a-9a51-0c7f4b7a9e10/cpu.cfs_quota_us = 100000
	// memory/kubepods/burstable/pod6f1b0e0e-4d3c-4c2a-9a51-0c7f4b7a9e10/memory.limit_in_bytes = 268435456
}
