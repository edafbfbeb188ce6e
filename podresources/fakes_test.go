package podresources_test

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubeletkit/kubeletkit/podresources"
)

// pods are fixed pods: active, and all the node holds.
type pods struct{ active, all []*v1.Pod }

func (p pods) ActivePods() []*v1.Pod { return p.active }
func (p pods) Pods() []*v1.Pod       { return p.all }

// devs: pod UID → container → resource → IDs, the allocatable IDs, and
// NUMA nodes by device ID.
type devs struct {
	held        map[types.UID]map[string]map[string][]string
	allocatable map[string][]string
	numa        map[string][]int
}

func (d devs) NUMANodes(_, id string) []int { return d.numa[id] }

func (d devs) Devices(uid types.UID, c string) map[string][]string { return d.held[uid][c] }
func (d devs) AllocatableDevices() map[string][]string             { return d.allocatable }

// cpus gives every container the same CPUs.
type cpus struct{ each, allocatable []int64 }

func (c cpus) CPUs(types.UID, string) []int64 { return c.each }
func (c cpus) AllocatableCPUs() []int64       { return c.allocatable }

// memory gives every container the same blocks.
type memory struct{ each, allocatable []*api.ContainerMemory }

func (m memory) Memory(types.UID, string) []*api.ContainerMemory { return m.each }
func (m memory) AllocatableMemory() []*api.ContainerMemory       { return m.allocatable }

var (
	_ podresources.Pods    = pods{}
	_ podresources.Devices = devs{}
	_ podresources.CPUs    = cpus{}
	_ podresources.Memory  = memory{}
)

var always = v1.ContainerRestartPolicyAlways

// pod is a pod with init containers (a name starting "sidecar" is
// restartable) and containers.
func pod(ns, name string, inits []string, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid")}}
	for _, c := range inits {
		ic := v1.Container{Name: c}
		if len(c) >= 7 && c[:7] == "sidecar" {
			ic.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, ic)
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}
