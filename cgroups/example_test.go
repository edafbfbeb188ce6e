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

// printSystemd stands for systemd: it prints what the driver asks.
type printSystemd struct{}

func (printSystemd) StartTransientUnit(_ context.Context, name string, props []cgroups.SystemdProperty) (string, error) {
	fmt.Println("start", name, props)
	return "done", nil
}

func (printSystemd) SetUnitProperties(_ context.Context, name string, props []cgroups.SystemdProperty) error {
	fmt.Println("set", name, props)
	return nil
}

func (printSystemd) StopUnit(_ context.Context, name string) (string, error) {
	fmt.Println("stop", name)
	return "done", nil
}

func (printSystemd) ResetFailedUnit(context.Context, string) error { return nil }

func (printSystemd) Version(context.Context) (int, error) { return 252, nil }

// The systemd driver on a cgroup v2 node: a Guaranteed pod's slice, as
// systemd is asked for it (here a stand-in that prints; in a kubelet,
// Options.Systemd left nil, Start connects to the machine's systemd).
func ExampleManager_systemd() {
	root, _ := os.MkdirTemp("", "cgroups-example")
	defer os.RemoveAll(root)
	_ = os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids"), 0o644)
	m, err := cgroups.New(cgroups.Options{Root: root, Remove: os.RemoveAll, Driver: cgroups.DriverSystemd, Systemd: printSystemd{}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.Start(context.Background(), cgroups.NodeConfig(v1.ResourceList{v1.ResourceMemory: resource.MustParse("8Gi")})); err != nil {
		panic(err)
	}
	pod := &v1.Pod{}
	pod.UID = "6f1b0e0e-4d3c-4c2a-9a51-0c7f4b7a9e10"
	limits := v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("256Mi")}
	pod.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: limits, Limits: limits}}}
	fmt.Println("--- the pod")
	if err := m.EnsurePod(pod); err != nil {
		panic(err)
	}
	parent, _ := m.CgroupParent(pod)
	b, _ := os.ReadFile(filepath.Join(root, parent, "cpu.max"))
	fmt.Printf("cgroup parent %s, cpu.max %s\n", parent, b)
	n, _ := m.PodName(pod)
	if err := m.Destroy(n); err != nil {
		panic(err)
	}
	// Output:
	// start kubepods.slice [{Description libcontainer container kubepods.slice} {Wants [-.slice]} {MemoryAccounting true} {CPUAccounting true} {IOAccounting true} {TasksAccounting true} {DefaultDependencies false}]
	// set kubepods.slice [{MemoryMax 8589934592}]
	// start kubepods-burstable.slice [{Description libcontainer container kubepods-burstable.slice} {Wants [kubepods.slice]} {MemoryAccounting true} {CPUAccounting true} {IOAccounting true} {TasksAccounting true} {DefaultDependencies false}]
	// start kubepods-besteffort.slice [{Description libcontainer container kubepods-besteffort.slice} {Wants [kubepods.slice]} {MemoryAccounting true} {CPUAccounting true} {IOAccounting true} {TasksAccounting true} {DefaultDependencies false}]
	// set kubepods-besteffort.slice [{CPUWeight 1}]
	// --- the pod
	// start kubepods-pod6f1b0e0e_4d3c_4c2a_9a51_0c7f4b7a9e10.slice [{Description libcontainer container kubepods-pod6f1b0e0e_4d3c_4c2a_9a51_0c7f4b7a9e10.slice} {Wants [kubepods.slice]} {MemoryAccounting true} {CPUAccounting true} {IOAccounting true} {TasksAccounting true} {DefaultDependencies false}]
	// set kubepods-pod6f1b0e0e_4d3c_4c2a_9a51_0c7f4b7a9e10.slice [{MemoryMax 268435456} {CPUWeight 20} {CPUQuotaPeriodUSec 100000} {CPUQuotaPerSecUSec 500000}]
	// cgroup parent /kubepods.slice/kubepods-pod6f1b0e0e_4d3c_4c2a_9a51_0c7f4b7a9e10.slice, cpu.max 50000 100000
	// stop kubepods-pod6f1b0e0e_4d3c_4c2a_9a51_0c7f4b7a9e10.slice
}
