package eviction

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal names a resource the eviction manager watches.
type Signal string

// The signals, with upstream's names (the flags' syntax).
const (
	// SignalMemoryAvailable is the node's memory capacity minus its
	// working set.
	SignalMemoryAvailable Signal = "memory.available"
	// SignalAllocatableMemoryAvailable is the node's allocatable memory
	// minus the working set of the pods' cgroup.
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	// SignalNodeFsAvailable is the free space of the node filesystem.
	SignalNodeFsAvailable Signal = "nodefs.available"
	// SignalNodeFsInodesFree is the free inodes of the node filesystem.
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalImageFsAvailable is the free space of the image filesystem.
	SignalImageFsAvailable Signal = "imagefs.available"
	// SignalImageFsInodesFree is the free inodes of the image filesystem.
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	// SignalContainerFsAvailable is the free space of the filesystem
	// that holds the containers' writable layers (KubeletSeparateDiskGC).
	// Its thresholds are derived (ContainerFsThresholds), not configured.
	SignalContainerFsAvailable Signal = "containerfs.available"
	// SignalContainerFsInodesFree is the free inodes of the container
	// filesystem.
	SignalContainerFsInodesFree Signal = "containerfs.inodesFree"
	// SignalPIDAvailable is the number of processes the node can still
	// start.
	SignalPIDAvailable Signal = "pid.available"
)

// The resources a signal starves, as upstream names them in eviction
// messages ("The node was low on resource: inodes.").
const (
	resourceInodes v1.ResourceName = "inodes"
	resourcePIDs   v1.ResourceName = "pids"
)

// signalInfo is what is known about each signal: the node condition it sets
// and the resource it starves.
var signalInfo = map[Signal]struct {
	condition v1.NodeConditionType
	resource  v1.ResourceName
}{
	SignalMemoryAvailable:            {v1.NodeMemoryPressure, v1.ResourceMemory},
	SignalAllocatableMemoryAvailable: {v1.NodeMemoryPressure, v1.ResourceMemory},
	SignalNodeFsAvailable:            {v1.NodeDiskPressure, v1.ResourceEphemeralStorage},
	SignalNodeFsInodesFree:           {v1.NodeDiskPressure, resourceInodes},
	SignalImageFsAvailable:           {v1.NodeDiskPressure, v1.ResourceEphemeralStorage},
	SignalImageFsInodesFree:          {v1.NodeDiskPressure, resourceInodes},
	SignalContainerFsAvailable:       {v1.NodeDiskPressure, v1.ResourceEphemeralStorage},
	SignalContainerFsInodesFree:      {v1.NodeDiskPressure, resourceInodes},
	SignalPIDAvailable:               {v1.NodePIDPressure, resourcePIDs},
}

// Valid reports whether s is a signal this package knows.
func (s Signal) Valid() bool { _, ok := signalInfo[s]; return ok }

// ThresholdOperator compares an observation to a threshold. Only LessThan
// exists, as upstream.
type ThresholdOperator string

// OpLessThan means the threshold is met when the available amount is less
// than the threshold's quantity.
const OpLessThan ThresholdOperator = "LessThan"

// ThresholdValue is a quantity or a fraction of the capacity. Exactly one is
// set.
type ThresholdValue struct {
	// Quantity is an absolute amount ("100Mi", "1000").
	Quantity *resource.Quantity
	// Percentage is a fraction of the capacity in (0, 1] ("10%" is 0.1).
	Percentage float32
}

// amount returns the value in the signal's unit for a given capacity.
func (v ThresholdValue) amount(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(float64(capacity) * float64(v.Percentage))
}

// String formats the value as the flags spell it.
func (v ThresholdValue) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	s := strconv.FormatFloat(float64(v.Percentage)*100, 'f', 4, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// Threshold is one eviction threshold.
type Threshold struct {
	// Signal is what is compared.
	Signal Signal
	// Operator is how (always OpLessThan).
	Operator ThresholdOperator
	// Value is the threshold.
	Value ThresholdValue
	// GracePeriod is how long the threshold must be met before it acts;
	// zero makes it a hard threshold.
	GracePeriod time.Duration
	// MinReclaim, when set, is how much beyond the threshold must be
	// available again before a met threshold stops being met.
	MinReclaim *ThresholdValue
}

// IsHard reports whether t is a hard threshold (no grace period).
func (t Threshold) IsHard() bool { return t.GracePeriod == 0 }

// String formats the threshold as the flags spell it ("memory.available<100Mi").
func (t Threshold) String() string {
	s := string(t.Signal) + "<" + t.Value.String()
	if t.GracePeriod > 0 {
		s += " (grace " + t.GracePeriod.String() + ")"
	}
	return s
}

// AddAllocatableThresholds returns ts with, for every hard
// memory.available threshold, an allocatableMemory.available threshold of
// the same value and minimum reclaim, as upstream does when node allocatable
// is enforced on the pods' cgroup (--enforce-node-allocatable=pods). The
// stats provider must then measure Node.AllocatableMemory.
func AddAllocatableThresholds(ts []Threshold) []Threshold {
	out := slices.Clone(ts)
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable && t.IsHard() {
			out = append(out, Threshold{Signal: SignalAllocatableMemoryAvailable, Operator: t.Operator, Value: t.Value, MinReclaim: t.MinReclaim})
		}
	}
	return out
}

// ErrInvalidThreshold is wrapped by every ParseThresholds error.
var ErrInvalidThreshold = errors.New("invalid eviction threshold")

// DefaultHardThresholds returns upstream's Linux defaults:
// memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%,
// imagefs.available<15%.
func DefaultHardThresholds() []Threshold {
	q := resource.MustParse("100Mi")
	return []Threshold{
		{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: &q}},
		{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.1}},
		{Signal: SignalNodeFsInodesFree, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.05}},
		{Signal: SignalImageFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.15}},
	}
}

// ParseThresholds parses the kubelet's eviction flags:
//
//   - hard (--eviction-hard) and soft (--eviction-soft):
//     "memory.available<100Mi,nodefs.available<10%";
//   - softGrace (--eviction-soft-grace-period): "memory.available=1m30s",
//     required for every soft threshold;
//   - minReclaim (--eviction-minimum-reclaim): "memory.available=0Mi" or a
//     percentage, applied to the hard and soft thresholds of the signal.
//
// As upstream, "0%" and "100%" disable a threshold, a quantity must be
// positive, a signal may appear once per flag, and unknown signals are
// errors. Hard thresholds come first, each flag in its written order. Every
// error wraps ErrInvalidThreshold and names the statement at fault.
func ParseThresholds(hard, soft, softGrace, minReclaim string) ([]Threshold, error) {
	hardTs, err := parseStatements("eviction-hard", hard)
	if err != nil {
		return nil, err
	}
	softTs, err := parseStatements("eviction-soft", soft)
	if err != nil {
		return nil, err
	}
	graces, err := parseGracePeriods(softGrace)
	if err != nil {
		return nil, err
	}
	reclaims, err := parseMinReclaims(minReclaim)
	if err != nil {
		return nil, err
	}
	for i := range softTs {
		g, ok := graces[softTs[i].Signal]
		if !ok {
			return nil, fmt.Errorf("%w: grace period must be specified for the soft eviction threshold %s", ErrInvalidThreshold, softTs[i].Signal)
		}
		softTs[i].GracePeriod = g
	}
	out := append(hardTs, softTs...)
	for i := range out {
		if r, ok := reclaims[out[i].Signal]; ok {
			r := r
			out[i].MinReclaim = &r
		}
	}
	return out, nil
}

func splitStatements(expr string) []string {
	var out []string
	for _, s := range strings.Split(expr, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseStatements(flag, expr string) ([]Threshold, error) {
	var out []Threshold
	seen := map[Signal]bool{}
	for _, st := range splitStatements(expr) {
		name, val, ok := strings.Cut(st, "<")
		if !ok || strings.Contains(val, "<") {
			return nil, fmt.Errorf("%w: %s: invalid eviction threshold syntax %q, expected <signal><<value>", ErrInvalidThreshold, flag, st)
		}
		sig := Signal(strings.TrimSpace(name))
		if !sig.Valid() {
			return nil, fmt.Errorf("%w: %s: unsupported eviction signal %q", ErrInvalidThreshold, flag, sig)
		}
		if seen[sig] {
			return nil, fmt.Errorf("%w: %s: found duplicate eviction threshold for signal %s", ErrInvalidThreshold, flag, sig)
		}
		seen[sig] = true
		v, skip, err := parseValue(strings.TrimSpace(val), true)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: signal %s: %w", ErrInvalidThreshold, flag, sig, err)
		}
		if skip {
			continue
		}
		out = append(out, Threshold{Signal: sig, Operator: OpLessThan, Value: v})
	}
	return out, nil
}

// parseValue parses "100Mi" or "10%". For thresholds (not min-reclaim),
// "0%" and "100%" mean "no threshold" (skip).
func parseValue(s string, threshold bool) (v ThresholdValue, skip bool, err error) {
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		if threshold && (s == "0%" || s == "100%") {
			return v, true, nil
		}
		f, err := strconv.ParseFloat(pct, 32)
		if err != nil {
			return v, false, fmt.Errorf("invalid percentage %q", s)
		}
		switch {
		case f < 0:
			return v, false, fmt.Errorf("percentage must be >= 0%%: %s", s)
		case f > 100:
			return v, false, fmt.Errorf("percentage must be <= 100%%: %s", s)
		case f == 0 && !threshold:
			return v, false, fmt.Errorf("percentage must be positive: %s", s)
		}
		return ThresholdValue{Percentage: float32(f / 100)}, false, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return v, false, fmt.Errorf("invalid quantity %q: %w", s, err)
	}
	if q.Sign() < 0 || (threshold && q.IsZero()) {
		if threshold {
			return v, false, fmt.Errorf("threshold must be positive: %s", s)
		}
		return v, false, fmt.Errorf("must not be negative: %s", s)
	}
	return ThresholdValue{Quantity: &q}, false, nil
}

func parseGracePeriods(expr string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	for _, st := range splitStatements(expr) {
		name, val, ok := strings.Cut(st, "=")
		if !ok || strings.Contains(val, "=") {
			return nil, fmt.Errorf("%w: eviction-soft-grace-period: invalid syntax %q, expected <signal>=<duration>", ErrInvalidThreshold, st)
		}
		sig := Signal(strings.TrimSpace(name))
		if !sig.Valid() {
			return nil, fmt.Errorf("%w: eviction-soft-grace-period: unsupported eviction signal %q", ErrInvalidThreshold, sig)
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("%w: eviction-soft-grace-period: signal %s: %w", ErrInvalidThreshold, sig, err)
		}
		if d < 0 {
			return nil, fmt.Errorf("%w: eviction-soft-grace-period: signal %s: must be a positive value: %s", ErrInvalidThreshold, sig, val)
		}
		if _, dup := out[sig]; dup {
			return nil, fmt.Errorf("%w: eviction-soft-grace-period: duplicate grace period for %s", ErrInvalidThreshold, sig)
		}
		out[sig] = d
	}
	return out, nil
}

func parseMinReclaims(expr string) (map[Signal]ThresholdValue, error) {
	out := map[Signal]ThresholdValue{}
	for _, st := range splitStatements(expr) {
		name, val, ok := strings.Cut(st, "=")
		if !ok || strings.Contains(val, "=") {
			return nil, fmt.Errorf("%w: eviction-minimum-reclaim: invalid syntax %q, expected <signal>=<value>", ErrInvalidThreshold, st)
		}
		sig := Signal(strings.TrimSpace(name))
		if !sig.Valid() {
			return nil, fmt.Errorf("%w: eviction-minimum-reclaim: unsupported eviction signal %q", ErrInvalidThreshold, sig)
		}
		if _, dup := out[sig]; dup {
			return nil, fmt.Errorf("%w: eviction-minimum-reclaim: duplicate minimum reclaim for %s", ErrInvalidThreshold, sig)
		}
		v, _, err := parseValue(strings.TrimSpace(val), false)
		if err != nil {
			return nil, fmt.Errorf("%w: eviction-minimum-reclaim: signal %s: %w", ErrInvalidThreshold, sig, err)
		}
		out[sig] = v
	}
	return out, nil
}

// HardMemoryAvailable is the hard memory.available threshold among ts in
// bytes, a percentage taken of capacity (the machine's memory): what a
// memory manager's reservedMemory must cover beside kube and system
// reserved. 0 when there is none.
func HardMemoryAvailable(ts []Threshold, capacity int64) int64 {
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable && t.IsHard() {
			return t.Value.amount(capacity)
		}
	}
	return 0
}
