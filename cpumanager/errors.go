package cpumanager

import "fmt"

// ReasonSMTAlignmentError is the admission reason of a pod refused by the
// static policy's full-pcpus-only option, upstream's SMTAlignmentError.
const ReasonSMTAlignmentError = "SMTAlignmentError"

// SMTAlignmentError refuses a container whose exclusive CPUs would not
// fill whole physical cores under the full-pcpus-only option. Its Type is
// the admission reason, so that admission chains (topologymanager) refuse
// the pod with it, as upstream does.
type SMTAlignmentError struct {
	RequestedCPUs         int
	CPUsPerCore           int
	AvailablePhysicalCPUs int
	CausedByPhysicalCPUs  bool
}

// Error is upstream's message.
func (e SMTAlignmentError) Error() string {
	if e.CausedByPhysicalCPUs {
		return fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d",
			e.AvailablePhysicalCPUs, e.RequestedCPUs, e.CPUsPerCore)
	}
	return fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", e.RequestedCPUs, e.CPUsPerCore)
}

// Type is the admission reason, ReasonSMTAlignmentError.
func (e SMTAlignmentError) Type() string { return ReasonSMTAlignmentError }
