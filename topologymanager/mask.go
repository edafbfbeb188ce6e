package topologymanager

import (
	"math/bits"
	"strconv"
	"strings"
)

// Mask is a set of NUMA node IDs, bit n standing for node n (0..63): the
// value form of upstream's bitmask.BitMask. The zero Mask is empty; in a
// Hint it means "no NUMA preference" (upstream's nil affinity).
type Mask uint64

// NewMask returns the Mask of the given node IDs. IDs outside 0..63 cannot
// be represented and are ignored (New refuses such a machine).
func NewMask(nodes ...int) Mask {
	var m Mask
	for _, n := range nodes {
		if n >= 0 && n < 64 {
			m |= 1 << uint(n)
		}
	}
	return m
}

// Nodes returns the IDs in the Mask in increasing order (nil when empty).
func (m Mask) Nodes() []int {
	if m == 0 {
		return nil
	}
	out := make([]int, 0, m.Count())
	for v := uint64(m); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// Count returns how many nodes the Mask holds.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// IsEmpty reports whether the Mask holds no node.
func (m Mask) IsEmpty() bool { return m == 0 }

// IsSet reports whether node n is in the Mask.
func (m Mask) IsSet(n int) bool { return n >= 0 && n < 64 && m&(1<<uint(n)) != 0 }

// And returns the nodes in both m and o.
func (m Mask) And(o Mask) Mask { return m & o }

// Or returns the nodes in m or o.
func (m Mask) Or(o Mask) Mask { return m | o }

// IsNarrowerThan reports whether m holds fewer nodes than o or, with as many,
// is the smaller number (lower-numbered nodes win), upstream's order of
// preference between two affinities.
func (m Mask) IsNarrowerThan(o Mask) bool {
	if c, d := m.Count(), o.Count(); c != d {
		return c < d
	}
	return m < o
}

// String lists the node IDs in braces, "{0,1}"; the empty Mask is "{}".
// (Upstream prints a binary string with node 0 rightmost, "11".)
func (m Mask) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range m.Nodes() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteByte('}')
	return b.String()
}

// IterateMasks calls f with every non-empty subset of nodes, in upstream's
// order (bitmask.IterateBitMasks): first the single nodes, then the pairs,
// and so on, each size in the lexical order of nodes. Hint providers use it
// to enumerate the NUMA affinities a request could be satisfied from.
func IterateMasks(nodes []int, f func(Mask)) {
	var rec func(rest []int, acc Mask, left int)
	rec = func(rest []int, acc Mask, left int) {
		if left == 0 {
			f(acc)
			return
		}
		for i, n := range rest {
			rec(rest[i+1:], acc|NewMask(n), left-1)
		}
	}
	for size := 1; size <= len(nodes); size++ {
		rec(nodes, 0, size)
	}
}

// MinimalHints is the hint generation the resource managers share: for
// every mask of nodes (IterateMasks), fits reports whether the free
// resources inside the mask satisfy the request (a hint) and whether the
// resources inside it could at all, free or not; a hint is preferred when
// its mask is as small as the smallest that could. The result is never nil:
// an empty slice means the request cannot be satisfied.
func MinimalHints(nodes []int, fits func(Mask) (free, could bool)) []Hint {
	minSize := len(nodes)
	out := []Hint{}
	IterateMasks(nodes, func(mask Mask) {
		free, could := fits(mask)
		if could && mask.Count() < minSize {
			minSize = mask.Count()
		}
		if free {
			out = append(out, Hint{NUMANodes: mask})
		}
	})
	for i := range out {
		out[i].Preferred = out[i].NUMANodes.Count() == minSize
	}
	return out
}

// Hint is upstream's TopologyHint: the NUMA nodes a resource would be
// allocated from and whether that allocation is preferred. An empty
// NUMANodes means no NUMA preference.
type Hint struct {
	// NUMANodes are the nodes of the allocation; empty: any node.
	NUMANodes Mask
	// Preferred is true when the allocation is one the provider prefers
	// (typically the narrowest that satisfies the request).
	Preferred bool
}

// String prints the hint as "{0} preferred" or "{0,1} not preferred"; an
// empty NUMANodes prints as "any".
func (h Hint) String() string {
	nodes := "any"
	if h.NUMANodes != 0 {
		nodes = h.NUMANodes.String()
	}
	if h.Preferred {
		return nodes + " preferred"
	}
	return nodes + " not preferred"
}
