package topologymanager

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
)

// Scope names, the values of KubeletConfiguration's topologyManagerScope
// (--topology-manager-scope).
const (
	// ScopeContainer merges hints and allocates container by container.
	// The default.
	ScopeContainer = "container"
	// ScopePod merges the hints of the whole pod once and gives every
	// container the same affinity.
	ScopePod = "pod"
)

// Policy options, the keys of KubeletConfiguration's
// topologyManagerPolicyOptions (--topology-manager-policy-options).
const (
	// OptionPreferClosestNUMANodes ("true" or "false"): see
	// MergeOptions.PreferClosestNUMANodes.
	OptionPreferClosestNUMANodes = "prefer-closest-numa-nodes"
	// OptionMaxAllowableNUMANodes (an integer): the most NUMA nodes a
	// machine may have for a policy other than none;
	// DefaultMaxAllowableNUMANodes when absent.
	OptionMaxAllowableNUMANodes = "max-allowable-numa-nodes"

	// DefaultMaxAllowableNUMANodes is upstream's limit: the merge walks
	// every combination of hints, which explodes with the node count.
	DefaultMaxAllowableNUMANodes = 8
)

// ErrInvalidOptions is wrapped by every error New returns.
var ErrInvalidOptions = errors.New("invalid topology manager options")

// Options configure a Manager.
type Options struct {
	// Policy is one of PolicyNone (the default, also for ""),
	// PolicyBestEffort, PolicyRestricted, PolicySingleNumaNode.
	Policy string
	// Scope is ScopeContainer (the default, also for "") or ScopePod.
	// Ignored with PolicyNone.
	Scope string
	// PolicyOptions are upstream's topologyManagerPolicyOptions:
	// OptionPreferClosestNUMANodes and OptionMaxAllowableNUMANodes. Any
	// other key is an error.
	PolicyOptions map[string]string
	// NUMANodes are the machine's NUMA node IDs (0..63), at least one.
	NUMANodes []int
	// Distances are the NUMA distances (MergeOptions.Distances), required
	// for every node when prefer-closest-numa-nodes is true and the policy
	// is not none; upstream reads them from
	// /sys/devices/system/node/node<N>/distance.
	Distances map[int][]int
	// Logger receives the decisions at debug level; nil discards them.
	Logger *slog.Logger
}

var (
	policies = []string{PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNumaNode}
	scopes   = []string{ScopeContainer, ScopePod}
)

// validated is what New derives from Options.
type validated struct {
	policy, scope string
	nodes         []int
	merge         MergeOptions
	maxNodes      int
}

func (o Options) validate() (validated, error) {
	v := validated{policy: o.Policy, scope: o.Scope, maxNodes: DefaultMaxAllowableNUMANodes}
	if v.policy == "" {
		v.policy = PolicyNone
	}
	if v.scope == "" {
		v.scope = ScopeContainer
	}
	if !slices.Contains(policies, v.policy) {
		return v, fmt.Errorf("%w: unknown policy %q (allowed: %s)", ErrInvalidOptions, o.Policy, strings.Join(policies, ", "))
	}
	if !slices.Contains(scopes, v.scope) {
		return v, fmt.Errorf("%w: unknown scope %q (allowed: %s)", ErrInvalidOptions, o.Scope, strings.Join(scopes, ", "))
	}
	names := make([]string, 0, len(o.PolicyOptions))
	for name := range o.PolicyOptions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := o.PolicyOptions[name]
		switch name {
		case OptionPreferClosestNUMANodes:
			b, err := strconv.ParseBool(value)
			if err != nil {
				return v, fmt.Errorf("%w: bad value for option %q: %w", ErrInvalidOptions, name, err)
			}
			v.merge.PreferClosestNUMANodes = b
		case OptionMaxAllowableNUMANodes:
			n, err := strconv.Atoi(value)
			if err != nil {
				return v, fmt.Errorf("%w: bad value for option %q: %w", ErrInvalidOptions, name, err)
			}
			if n > 0 { // upstream: 0 (or unset) means the default
				v.maxNodes = n
			} else if n < 0 {
				return v, fmt.Errorf("%w: bad value for option %q: %d is negative", ErrInvalidOptions, name, n)
			}
		default:
			return v, fmt.Errorf("%w: unknown Topology Manager Policy option: %q (allowed: %s, %s)",
				ErrInvalidOptions, name, OptionPreferClosestNUMANodes, OptionMaxAllowableNUMANodes)
		}
	}
	if len(o.NUMANodes) == 0 {
		return v, fmt.Errorf("%w: no NUMA nodes", ErrInvalidOptions)
	}
	seen := map[int]bool{}
	for _, n := range o.NUMANodes {
		if n < 0 || n > 63 {
			return v, fmt.Errorf("%w: NUMA node %d out of range 0-63", ErrInvalidOptions, n)
		}
		if seen[n] {
			return v, fmt.Errorf("%w: NUMA node %d listed twice", ErrInvalidOptions, n)
		}
		seen[n] = true
	}
	v.nodes = slices.Clone(o.NUMANodes)
	slices.Sort(v.nodes)
	if v.policy == PolicyNone {
		return v, nil
	}
	if len(v.nodes) > v.maxNodes {
		return v, fmt.Errorf("%w: unsupported on machines with more than %v NUMA Nodes", ErrInvalidOptions, v.maxNodes)
	}
	if v.merge.PreferClosestNUMANodes {
		for _, n := range v.nodes {
			if len(o.Distances[n]) <= v.nodes[len(v.nodes)-1] {
				return v, fmt.Errorf("%w: option %q needs the distances from NUMA node %d to every node", ErrInvalidOptions, OptionPreferClosestNUMANodes, n)
			}
		}
		v.merge.Distances = make(map[int][]int, len(v.nodes))
		for _, n := range v.nodes {
			v.merge.Distances[n] = slices.Clone(o.Distances[n])
		}
	}
	return v, nil
}
