package topologymanager

import (
	"slices"
)

// Policy names, the values of KubeletConfiguration's topologyManagerPolicy
// (--topology-manager-policy).
const (
	// PolicyNone does no alignment: every pod is admitted and no affinity
	// is recorded. The default.
	PolicyNone = "none"
	// PolicyBestEffort merges the hints and records the best affinity, but
	// admits every pod, aligned or not.
	PolicyBestEffort = "best-effort"
	// PolicyRestricted admits a pod only when the merged hint is preferred.
	PolicyRestricted = "restricted"
	// PolicySingleNumaNode considers only hints on a single NUMA node (or
	// without preference) and admits a pod only when such a preferred hint
	// exists for every resource.
	PolicySingleNumaNode = "single-numa-node"
)

// MergeOptions are the policy options that change how hints merge.
type MergeOptions struct {
	// PreferClosestNUMANodes (the prefer-closest-numa-nodes option): between
	// two candidate affinities with as many nodes, best-effort and
	// restricted pick the one whose nodes are closer to each other
	// (smaller average distance), instead of the lower-numbered one.
	PreferClosestNUMANodes bool
	// Distances[i][j] is the distance from NUMA node i to node j, as in
	// /sys/devices/system/node/node<i>/distance. A missing entry counts as
	// 0. Used only with PreferClosestNUMANodes.
	Distances map[int][]int
}

// Merge is the topology manager's decision for one container (scope
// container) or one pod (scope pod): the merge, by policy, of the hints of
// every provider, hints[i] being provider i's hints by resource name, on a
// machine whose NUMA nodes are numaNodes. It returns the affinity to record
// and whether the policy admits it. It is a pure function.
//
// As upstream: a provider with no hints at all (nil or empty map) or a
// resource with a nil slice has no preference (one hint: any node,
// preferred); a resource with an empty non-nil slice cannot be satisfied
// (one hint: any node, not preferred). Every combination of one hint per
// resource is merged by intersecting the NUMA nodes (an empty mask standing
// for all of numaNodes); the merged hint is preferred when each hint is
// preferred and all of them name the same nodes. Combinations that leave no
// node are dropped. The best merged hint is a preferred one over a
// non-preferred one; between preferred ones, the narrower (Mask's
// IsNarrowerThan) or, with PreferClosestNUMANodes and a policy other than
// single-numa-node, the closer; between non-preferred ones, the one whose
// node count comes closest to, without exceeding, the largest of the
// providers' narrowest hints. With nothing left, the result is all of
// numaNodes, not preferred.
//
// The policies: none returns the zero Hint and admits; best-effort admits
// whatever the result; restricted admits only a preferred result;
// single-numa-node first keeps only the preferred hints on one node (and
// the preferred ones without preference), merges those, turns a result
// spanning all of numaNodes into "any node" and admits only a preferred
// result. An unknown policy returns the zero Hint and refuses.
//
// Resources of one provider are taken in the order of their names, so the
// result never depends on map order (upstream's iteration of the map is
// random, which only matters where two candidates tie).
func Merge(policy string, opts MergeOptions, numaNodes []int, hints []map[string][]Hint) (best Hint, admit bool) {
	switch policy {
	case PolicyNone:
		return Hint{}, true
	case PolicyBestEffort, PolicyRestricted, PolicySingleNumaNode:
	default:
		return Hint{}, false
	}
	all := NewMask(numaNodes...)
	filtered := flatten(hints)
	if policy == PolicySingleNumaNode {
		filtered = singleNUMA(filtered)
	}
	m := merger{
		all:          all,
		closest:      opts.PreferClosestNUMANodes && policy != PolicySingleNumaNode,
		distances:    opts.Distances,
		nonPreferred: maxOfNarrowest(filtered),
	}
	best = m.merge(filtered)
	switch policy {
	case PolicyBestEffort:
		return best, true
	case PolicySingleNumaNode:
		if best.NUMANodes == all {
			best.NUMANodes = 0
		}
	}
	return best, best.Preferred
}

// flatten turns the providers' hints into one list of hints per resource.
func flatten(providers []map[string][]Hint) [][]Hint {
	var out [][]Hint
	for _, p := range providers {
		if len(p) == 0 {
			out = append(out, []Hint{{Preferred: true}})
			continue
		}
		names := make([]string, 0, len(p))
		for name := range p {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			switch hs := p[name]; {
			case hs == nil:
				out = append(out, []Hint{{Preferred: true}})
			case len(hs) == 0:
				out = append(out, []Hint{{Preferred: false}})
			default:
				out = append(out, hs)
			}
		}
	}
	return out
}

// singleNUMA keeps, for each resource, the preferred hints on one node or
// on any node.
func singleNUMA(resources [][]Hint) [][]Hint {
	out := make([][]Hint, 0, len(resources))
	for _, hs := range resources {
		var kept []Hint
		for _, h := range hs {
			if h.Preferred && h.NUMANodes.Count() <= 1 {
				kept = append(kept, h)
			}
		}
		out = append(out, kept)
	}
	return out
}

// maxOfNarrowest is the largest, over resources, of the node count of the
// resource's narrowest hint with a NUMA preference: the count the best
// non-preferred merged hint should come closest to.
func maxOfNarrowest(resources [][]Hint) int {
	maxCount := 0
	for _, hs := range resources {
		var narrowest Mask
		for _, h := range hs {
			if h.NUMANodes == 0 {
				continue
			}
			if narrowest == 0 || h.NUMANodes.IsNarrowerThan(narrowest) {
				narrowest = h.NUMANodes
			}
		}
		if c := narrowest.Count(); c > maxCount {
			maxCount = c
		}
	}
	return maxCount
}

type merger struct {
	all          Mask
	closest      bool
	distances    map[int][]int
	nonPreferred int
}

// merge walks every combination of one hint per resource and keeps the
// best merged hint.
func (m merger) merge(resources [][]Hint) Hint {
	var best Hint
	found := false
	for _, hs := range resources {
		if len(hs) == 0 {
			return Hint{NUMANodes: m.all}
		}
	}
	idx := make([]int, len(resources))
	for {
		cand := m.combine(resources, idx)
		if cand.NUMANodes != 0 {
			if !found {
				best, found = cand, true
			} else {
				best = m.better(best, cand)
			}
		}
		// Advance the odometer, the last resource fastest (upstream's
		// nesting order).
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(resources[i]) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			break
		}
	}
	if !found {
		return Hint{NUMANodes: m.all}
	}
	return best
}

// combine merges one combination of hints.
func (m merger) combine(resources [][]Hint, idx []int) Hint {
	merged := m.all
	preferred := true
	var first Mask
	for r, i := range idx {
		h := resources[r][i]
		if h.NUMANodes != 0 {
			if first == 0 {
				first = h.NUMANodes
			} else if h.NUMANodes != first {
				preferred = false
			}
			merged &= h.NUMANodes
		}
		if !h.Preferred {
			preferred = false
		}
	}
	return Hint{NUMANodes: merged, Preferred: preferred}
}

// better returns whichever of the current best and a candidate (both with
// nodes) wins, the current one on a tie.
func (m merger) better(cur, cand Hint) Hint {
	switch {
	case !cur.Preferred && cand.Preferred:
		return cand
	case cur.Preferred && !cand.Preferred:
		return cur
	case cur.Preferred && cand.Preferred:
		return m.fitter(cur, cand)
	}
	// Both not preferred: come as close as possible to m.nonPreferred
	// nodes without exceeding it.
	cc, nc, want := cur.NUMANodes.Count(), cand.NUMANodes.Count(), m.nonPreferred
	switch {
	case cc > want:
		return m.fitter(cur, cand)
	case cc == want:
		if nc != want {
			return cur
		}
		return m.fitter(cur, cand)
	case nc > want:
		return cur
	case nc == want:
		return cand
	case nc > cc:
		return cand
	case nc < cc:
		return cur
	}
	return m.fitter(cur, cand)
}

// fitter compares two affinities: the narrower, or the closer with
// PreferClosestNUMANodes.
func (m merger) fitter(cur, cand Hint) Hint {
	a, b := cur.NUMANodes, cand.NUMANodes
	if a == b {
		return cur
	}
	var best Mask
	if m.closest {
		best = m.closer(a, b)
	} else {
		best = narrower(a, b)
	}
	if best == a {
		return cur
	}
	return cand
}

func narrower(a, b Mask) Mask {
	if a.IsNarrowerThan(b) {
		return a
	}
	return b
}

// closer is upstream's NUMAInfo.Closest: the narrower of two masks of
// different sizes, else the one with the smaller average distance between
// its nodes, else the lower-numbered.
func (m merger) closer(a, b Mask) Mask {
	if a.Count() != b.Count() {
		return narrower(a, b)
	}
	da, db := averageDistance(m.distances, a), averageDistance(m.distances, b)
	switch {
	case da == db:
		if a < b {
			return a
		}
		return b
	case da < db:
		return a
	}
	return b
}

// averageDistance averages d[i][j] over every ordered pair (i, j) of nodes
// in mask, i == j included.
func averageDistance(d map[int][]int, mask Mask) float64 {
	nodes := mask.Nodes()
	if len(nodes) == 0 {
		return 0
	}
	var sum float64
	for _, i := range nodes {
		row := d[i]
		for _, j := range nodes {
			if j < len(row) {
				sum += float64(row[j])
			}
		}
	}
	return sum / float64(len(nodes)*len(nodes))
}
