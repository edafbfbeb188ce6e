package topologymanager

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// HintProvider is a resource manager the topology manager consults: the CPU
// manager, the memory manager, the device manager (upstream's
// topologymanager.HintProvider).
type HintProvider interface {
	// ContainerHints returns, by resource name, the NUMA affinities the
	// container's request could be satisfied from (scope container). A nil
	// map, or a resource with a nil slice, means no preference; an empty
	// non-nil slice means the resource cannot be satisfied. A provider
	// returns nil for what it does not manage (a pod that is not
	// Guaranteed, for the CPU manager's static policy).
	ContainerHints(pod *v1.Pod, c *v1.Container) map[string][]Hint
	// PodHints is ContainerHints for the whole pod (scope pod).
	PodHints(pod *v1.Pod) map[string][]Hint
	// Allocate allocates the container's resources, reading the affinity
	// the manager chose from the Store the provider was given. It is
	// called for every container of an admitted pod, also with policy
	// none. An error refuses the pod (see AdmitResult).
	Allocate(pod *v1.Pod, c *v1.Container) error
}

// Store answers which affinity the manager chose for a container; a
// provider reads it in Allocate. Manager is one.
type Store interface {
	// Affinity returns the container's affinity, the zero Hint when none
	// was recorded (policy none, or an unknown container).
	Affinity(uid types.UID, container string) Hint
}

// AdmissionError is an error that carries its own admission reason
// (upstream's cm/admission.Error), such as the CPU manager's
// SMTAlignmentError. When a provider's Allocate returns one (errors.As),
// the pod is refused with reason Type() and message Error().
type AdmissionError interface {
	error
	Type() string
}

// Upstream's reasons and message for a refused pod.
const (
	// ReasonTopologyAffinityError refuses a pod the policy does not admit,
	// with MessageTopologyAffinityError.
	ReasonTopologyAffinityError  = "TopologyAffinityError"
	MessageTopologyAffinityError = "Resources cannot be allocated with Topology locality"
	// ReasonUnexpectedAdmissionError refuses a pod whose Allocate failed
	// with an error that is not an AdmissionError.
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
)

// TopologyAffinityError is the error of a pod the policy does not admit.
type TopologyAffinityError struct{}

// Error returns MessageTopologyAffinityError.
func (TopologyAffinityError) Error() string { return MessageTopologyAffinityError }

// Type returns ReasonTopologyAffinityError.
func (TopologyAffinityError) Type() string { return ReasonTopologyAffinityError }

var _ AdmissionError = TopologyAffinityError{}

// AdmitResult turns an allocation error into an admission answer as
// upstream's cm/admission.GetPodAdmitResult does: nil admits; an
// AdmissionError (found by errors.As) refuses with its Type and Error;
// anything else refuses with ReasonUnexpectedAdmissionError and "Allocate
// failed due to <err>, which is unexpected".
func AdmitResult(err error) (ok bool, reason, message string) {
	if err == nil {
		return true, "", ""
	}
	var ae AdmissionError
	if errors.As(err, &ae) {
		return false, ae.Type(), ae.Error()
	}
	return false, ReasonUnexpectedAdmissionError, fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)
}

// AdmitAll is a resource manager's own admission when no topology manager
// drives it: allocate each container of pod, init containers first
// (podspec.Containers); at the first error, release what the pod got and
// refuse it with AdmitResult's reason and message.
func AdmitAll(pod *v1.Pod, allocate func(*v1.Pod, *v1.Container) error, release func(types.UID)) (ok bool, reason, message string) {
	for _, c := range podspec.Containers(pod) {
		if err := allocate(pod, c); err != nil {
			release(pod.UID)
			return AdmitResult(err)
		}
	}
	return true, "", ""
}

// Manager is the topology manager: an admission handler that merges the
// hint providers' NUMA hints by policy, records the chosen affinity of
// every container and has the providers allocate. See the package doc.
type Manager struct {
	log       *slog.Logger
	o         validated
	providers []HintProvider

	mu       sync.Mutex
	affinity map[types.UID]map[string]Hint
}

// New returns a Manager, or an error wrapping ErrInvalidOptions that names
// the offending value.
func New(opts Options) (*Manager, error) {
	v, err := opts.validate()
	if err != nil {
		return nil, fmt.Errorf("new topology manager: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{log: log, o: v, affinity: map[types.UID]map[string]Hint{}}, nil
}

// Policy returns the manager's policy name (PolicyNone for "").
func (m *Manager) Policy() string { return m.o.policy }

// Scope returns the manager's scope name (ScopeContainer for "").
func (m *Manager) Scope() string { return m.o.scope }

// NUMANodes returns the machine's NUMA node IDs, sorted.
func (m *Manager) NUMANodes() []int { return append([]int(nil), m.o.nodes...) }

// AddHintProvider adds a provider. Providers are consulted, and allocate,
// in the order they were added (upstream's: devices, CPU, memory). Add them
// before the first Admit.
func (m *Manager) AddHintProvider(p HintProvider) { m.providers = append(m.providers, p) }

// Admit decides whether the pod's resources can be aligned and, if so, has
// every provider allocate for every container: upstream's Topology Manager
// admit handler. otherPods are not used (the providers know their own
// allocations). It satisfies admission.Handler.
//
// Containers are taken in order, init containers (sidecars included) then
// app containers; ephemeral containers are not. With scope container each
// container's hints are merged and its affinity recorded before the
// providers allocate for it; with scope pod the pod's hints are merged once
// and every container gets that affinity. With policy none nothing is
// merged or recorded and the providers only allocate. Pods of every QoS
// class go through the same steps, as upstream: the providers return no
// hints for what they do not align.
//
// A refusal forgets every affinity recorded for the pod; what the providers
// allocated for earlier containers is theirs to release.
func (m *Manager) Admit(pod *v1.Pod, _ []*v1.Pod) (ok bool, reason, message string) {
	var err error
	switch {
	case m.o.policy == PolicyNone:
		err = m.admitNone(pod)
	case m.o.scope == ScopePod:
		err = m.admitPod(pod)
	default:
		err = m.admitContainers(pod)
	}
	ok, reason, message = AdmitResult(err)
	if !ok {
		m.RemovePod(pod.UID)
		m.log.Debug("pod refused", "pod", podName(pod), "reason", reason, "message", message)
	}
	return ok, reason, message
}

var _ Store = (*Manager)(nil)

func (m *Manager) admitNone(pod *v1.Pod) error {
	for _, c := range podspec.Containers(pod) {
		if err := m.allocate(pod, c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) admitContainers(pod *v1.Pod) error {
	for _, c := range podspec.Containers(pod) {
		hints := make([]map[string][]Hint, 0, len(m.providers))
		for _, p := range m.providers {
			hints = append(hints, p.ContainerHints(pod, c))
		}
		best, admit := Merge(m.o.policy, m.o.merge, m.o.nodes, hints)
		m.log.Debug("container affinity", "pod", podName(pod), "container", c.Name, "hint", best.String(), "admit", admit)
		if !admit {
			return TopologyAffinityError{}
		}
		m.set(pod.UID, c.Name, best)
		if err := m.allocate(pod, c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) admitPod(pod *v1.Pod) error {
	hints := make([]map[string][]Hint, 0, len(m.providers))
	for _, p := range m.providers {
		hints = append(hints, p.PodHints(pod))
	}
	best, admit := Merge(m.o.policy, m.o.merge, m.o.nodes, hints)
	m.log.Debug("pod affinity", "pod", podName(pod), "hint", best.String(), "admit", admit)
	if !admit {
		return TopologyAffinityError{}
	}
	for _, c := range podspec.Containers(pod) {
		m.set(pod.UID, c.Name, best)
		if err := m.allocate(pod, c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) allocate(pod *v1.Pod, c *v1.Container) error {
	for _, p := range m.providers {
		if err := p.Allocate(pod, c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) set(uid types.UID, container string, h Hint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.affinity[uid]
	if cs == nil {
		cs = map[string]Hint{}
		m.affinity[uid] = cs
	}
	cs[container] = h
}

// Affinity returns the affinity recorded for the pod's container, the zero
// Hint (no NUMA preference, not preferred) when there is none: policy none
// records nothing, as upstream. It is safe to call from a provider's
// Allocate and concurrently with everything else.
func (m *Manager) Affinity(uid types.UID, container string) Hint {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.affinity[uid][container]
}

// RemovePod forgets the affinities recorded for the pod (upstream forgets
// them container by container as they are removed). Call it when the pod
// is gone.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.affinity, uid)
}

// Pods returns how many pods have recorded affinities, for tests and
// metrics.
func (m *Manager) Pods() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.affinity)
}

func podName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
