package topologymanager

import (
	"fmt"
	"testing"
)

// BenchmarkMerge merges the hints of providers that each hint every subset
// of the machine's NUMA nodes (the worst case a CPU or device manager
// produces), preferred for the narrowest.
func BenchmarkMerge(b *testing.B) {
	for _, numa := range []int{2, 4, 8} {
		for _, providers := range []int{1, 2, 3} {
			nodes := make([]int, numa)
			for i := range nodes {
				nodes[i] = i
			}
			var hs []Hint
			IterateMasks(nodes, func(m Mask) { hs = append(hs, Hint{NUMANodes: m, Preferred: m.Count() == 1}) })
			var hints []map[string][]Hint
			for p := range providers {
				hints = append(hints, map[string][]Hint{fmt.Sprint("r", p): hs})
			}
			for _, policy := range []string{PolicyBestEffort, PolicySingleNumaNode} {
				b.Run(fmt.Sprintf("numa=%d/providers=%d/%s", numa, providers, policy), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						Merge(policy, MergeOptions{}, nodes, hints)
					}
				})
			}
		}
	}
}
