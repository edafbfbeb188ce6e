package memorymanager_test

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/memorymanager"
)

// BenchmarkContainerHints computes the hints of a container asking for
// memory and huge pages on machines of 2 to 8 NUMA nodes (every subset of
// nodes is a candidate), with half the nodes already serving a pod.
func BenchmarkContainerHints(b *testing.B) {
	for _, nodes := range []int{2, 4, 8} {
		b.Run(fmt.Sprintf("numa=%d", nodes), func(b *testing.B) {
			opts := memorymanager.Options{Policy: memorymanager.PolicyStatic, Logger: quiet,
				Machine: memorymanager.FakeMachine(nodes, 4*gi, memorymanager.HugePages{PageSize: 2 * mi, Pages: 512})}
			for i := range nodes {
				opts.ReservedMemory = append(opts.ReservedMemory, kubeletconfig.MemoryReservation{NumaNode: int32(i), Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi")}})
			}
			opts.KubeReserved = v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(int64(nodes)*512*mi, resource.BinarySI)}
			m, err := memorymanager.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			for i := range nodes / 2 {
				p := pod(fmt.Sprint("busy", i), []string{"app c mem=2Gi"})
				if ok, _, msg := m.Admit(p, nil); !ok {
					b.Fatal(msg)
				}
			}
			p := pod("p", []string{"app c mem=1Gi hugepages-2Mi=512Mi"})
			c := &p.Spec.Containers[0]
			b.ReportAllocs()
			for b.Loop() {
				m.ContainerHints(p, c)
			}
		})
	}
}
