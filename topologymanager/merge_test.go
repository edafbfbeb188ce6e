package topologymanager

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pref(nodes ...int) Hint    { return Hint{NUMANodes: NewMask(nodes...), Preferred: true} }
func notPref(nodes ...int) Hint { return Hint{NUMANodes: NewMask(nodes...)} }

type res = map[string][]Hint

func TestMask(t *testing.T) {
	m := NewMask(3, 0, 64, -1)
	assert.Equal(t, []int{0, 3}, m.Nodes())
	assert.Equal(t, 2, m.Count())
	assert.True(t, m.IsSet(3))
	assert.False(t, m.IsSet(1))
	assert.False(t, m.IsSet(64))
	assert.Equal(t, "{0,3}", m.String())
	assert.Equal(t, "{}", Mask(0).String())
	assert.Nil(t, Mask(0).Nodes())
	assert.Equal(t, NewMask(0), m.And(NewMask(0, 1)))
	assert.Equal(t, NewMask(0, 1, 3), m.Or(NewMask(1)))
	assert.Equal(t, "any preferred", Hint{Preferred: true}.String())
	assert.Equal(t, "{1} not preferred", notPref(1).String())

	for _, tc := range []struct {
		a, b Mask
		want bool
	}{
		{NewMask(0), NewMask(0, 1), true},
		{NewMask(0, 1), NewMask(0), false},
		{NewMask(0), NewMask(1), true}, // as many nodes: the lower-numbered
		{NewMask(1), NewMask(0), false},
		{NewMask(0, 3), NewMask(1, 2), false}, // 9 > 6: the smaller number wins
		{NewMask(1), NewMask(1), false},
	} {
		assert.Equal(t, tc.want, tc.a.IsNarrowerThan(tc.b), "%v narrower than %v", tc.a, tc.b)
	}
}

func TestIterateMasks(t *testing.T) {
	var got []string
	IterateMasks([]int{0, 1, 2}, func(m Mask) { got = append(got, m.String()) })
	assert.Equal(t, []string{"{0}", "{1}", "{2}", "{0,1}", "{0,2}", "{1,2}", "{0,1,2}"}, got)
}

type mergeCase struct {
	name  string
	hints []map[string][]Hint
	// expected result by policy
	bestEffort, restricted, single Hint
}

// The classic cases of upstream's policy tests, on two NUMA nodes unless
// said otherwise.
func mergeCases() []mergeCase {
	return []mergeCase{
		{
			name:       "no providers",
			hints:      nil,
			bestEffort: pref(0, 1), restricted: pref(0, 1), single: Hint{Preferred: true},
		},
		{
			name:       "one provider without hints (nil map)",
			hints:      []map[string][]Hint{nil},
			bestEffort: pref(0, 1), restricted: pref(0, 1), single: Hint{Preferred: true},
		},
		{
			name:       "a resource with nil hints: no preference",
			hints:      []map[string][]Hint{{"cpu": nil}},
			bestEffort: pref(0, 1), restricted: pref(0, 1), single: Hint{Preferred: true},
		},
		{
			name:       "a resource with empty hints: cannot be satisfied",
			hints:      []map[string][]Hint{{"cpu": {}}},
			bestEffort: notPref(0, 1), restricted: notPref(0, 1), single: Hint{},
		},
		{
			name:       "empty hints beside a preferred single-NUMA hint",
			hints:      []map[string][]Hint{{"cpu": {pref(0)}}, {"gpu": {}}},
			bestEffort: notPref(0), restricted: notPref(0), single: Hint{},
		},
		{
			name:       "nil hints beside a preferred single-NUMA hint",
			hints:      []map[string][]Hint{{"cpu": {pref(1)}}, {"gpu": nil}},
			bestEffort: pref(1), restricted: pref(1), single: pref(1),
		},
		{
			name:       "two providers, same single NUMA node, both preferred",
			hints:      []map[string][]Hint{{"cpu": {pref(0)}}, {"gpu": {pref(0)}}},
			bestEffort: pref(0), restricted: pref(0), single: pref(0),
		},
		{
			name:       "two providers, one hint each, no overlap",
			hints:      []map[string][]Hint{{"cpu": {pref(0)}}, {"gpu": {pref(1)}}},
			bestEffort: notPref(0, 1), restricted: notPref(0, 1), single: Hint{},
		},
		{
			name: "two providers, overlapping: the narrower preferred merge",
			hints: []map[string][]Hint{
				{"cpu": {pref(0), pref(1), notPref(0, 1)}},
				{"gpu": {pref(1), notPref(0, 1)}},
			},
			bestEffort: pref(1), restricted: pref(1), single: pref(1),
		},
		{
			name: "a preferred wider hint beats a narrower non-preferred one",
			hints: []map[string][]Hint{
				{"cpu": {pref(1), notPref(0, 1)}},
				{"gpu": {pref(0), pref(1), notPref(0, 1)}},
			},
			bestEffort: pref(1), restricted: pref(1), single: pref(1),
		},
		{
			name: "multi-NUMA preferred on both sides",
			hints: []map[string][]Hint{
				{"cpu": {notPref(0), notPref(1), pref(0, 1)}},
				{"gpu": {pref(0, 1)}},
			},
			bestEffort: pref(0, 1), restricted: pref(0, 1), single: Hint{},
		},
		{
			name: "preferred hints naming different nodes merge as not preferred",
			hints: []map[string][]Hint{
				{"cpu": {pref(0, 1)}},
				{"gpu": {pref(0)}},
			},
			bestEffort: notPref(0), restricted: notPref(0), single: Hint{},
		},
		{
			name: "several resources of one provider",
			hints: []map[string][]Hint{
				{"cpu": {pref(0), pref(1)}, "memory": {pref(1), notPref(0, 1)}},
			},
			bestEffort: pref(1), restricted: pref(1), single: pref(1),
		},
		{
			name: "only non-preferred combinations: the widest request's count, not the narrowest",
			hints: []map[string][]Hint{
				{"cpu": {notPref(0, 1), notPref(0, 1, 2, 3)}},
				{"gpu": {notPref(0, 1, 2), notPref(0, 1, 2, 3)}},
			},
			bestEffort: notPref(0, 1, 2), restricted: notPref(0, 1, 2), single: Hint{},
		},
	}
}

func TestMergePolicies(t *testing.T) {
	for _, tc := range mergeCases() {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []int{0, 1}
			if tc.name == "only non-preferred combinations: the widest request's count, not the narrowest" {
				nodes = []int{0, 1, 2, 3}
			}
			for _, p := range []struct {
				policy    string
				want      Hint
				wantAdmit bool
			}{
				{PolicyBestEffort, tc.bestEffort, true},
				{PolicyRestricted, tc.restricted, tc.restricted.Preferred},
				{PolicySingleNumaNode, tc.single, tc.single.Preferred},
			} {
				got, admit := Merge(p.policy, MergeOptions{}, nodes, tc.hints)
				assert.Equal(t, p.want, got, "%s: got %v, want %v", p.policy, got, p.want)
				assert.Equal(t, p.wantAdmit, admit, p.policy)
			}
			got, admit := Merge(PolicyNone, MergeOptions{}, nodes, tc.hints)
			assert.Equal(t, Hint{}, got)
			assert.True(t, admit)
		})
	}
}

func TestMergeUnknownPolicy(t *testing.T) {
	got, admit := Merge("bogus", MergeOptions{}, []int{0}, nil)
	assert.Equal(t, Hint{}, got)
	assert.False(t, admit)
}

func TestMergeSingleNUMAOneNode(t *testing.T) {
	// On a one-node machine the single node is "all nodes": no preference.
	got, admit := Merge(PolicySingleNumaNode, MergeOptions{}, []int{0}, []map[string][]Hint{{"cpu": {pref(0)}}})
	assert.Equal(t, Hint{Preferred: true}, got)
	assert.True(t, admit)
}

func TestMergePreferClosest(t *testing.T) {
	// Nodes 0 and 2 share a socket; 1 and 3 the other.
	distances := map[int][]int{
		0: {10, 21, 11, 21},
		1: {21, 10, 21, 11},
		2: {11, 21, 10, 21},
		3: {21, 11, 21, 10},
	}
	nodes := []int{0, 1, 2, 3}
	hints := []map[string][]Hint{{"cpu": {pref(0, 1), pref(0, 2), notPref(0, 1, 2, 3)}}}
	for _, tc := range []struct {
		policy  string
		closest bool
		want    Hint
	}{
		{PolicyBestEffort, false, pref(0, 1)},
		{PolicyBestEffort, true, pref(0, 2)},
		{PolicyRestricted, true, pref(0, 2)},
		{PolicySingleNumaNode, true, notPrefAny()},
	} {
		got, _ := Merge(tc.policy, MergeOptions{PreferClosestNUMANodes: tc.closest, Distances: distances}, nodes, hints)
		assert.Equal(t, tc.want, got, "%s closest=%v", tc.policy, tc.closest)
	}
	// A narrower mask still wins over a closer wider one.
	got, _ := Merge(PolicyBestEffort, MergeOptions{PreferClosestNUMANodes: true, Distances: distances}, nodes,
		[]map[string][]Hint{{"cpu": {pref(0, 2, 1), pref(3)}}})
	assert.Equal(t, pref(3), got)
	// Equal distances: the lower-numbered mask.
	got, _ = Merge(PolicyBestEffort, MergeOptions{PreferClosestNUMANodes: true, Distances: distances}, nodes,
		[]map[string][]Hint{{"cpu": {pref(1, 3), pref(0, 2)}}})
	assert.Equal(t, pref(0, 2), got)
}

func notPrefAny() Hint { return Hint{} }

func TestMergeDoesNotDependOnMapOrder(t *testing.T) {
	hints := []map[string][]Hint{{
		"a": {notPref(0), notPref(1)},
		"b": {notPref(1), notPref(0)},
		"c": {notPref(0, 1)},
	}}
	first, _ := Merge(PolicyBestEffort, MergeOptions{}, []int{0, 1}, hints)
	for range 50 {
		got, _ := Merge(PolicyBestEffort, MergeOptions{}, []int{0, 1}, hints)
		require.Equal(t, first, got)
	}
}
