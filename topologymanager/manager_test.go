package topologymanager_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/admission"
	"github.com/kubeletkit/kubeletkit/topologymanager"
	"github.com/kubeletkit/kubeletkit/topologymanager/topologymanagertest"
)

var _ admission.Handler = (*topologymanager.Manager)(nil)

func hint(pref bool, nodes ...int) topologymanager.Hint {
	return topologymanager.Hint{NUMANodes: topologymanager.NewMask(nodes...), Preferred: pref}
}

func newPod(uid string, init []string, apps ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: k8stypes.UID(uid)}}
	always := v1.ContainerRestartPolicyAlways
	for i, n := range init {
		c := v1.Container{Name: n}
		if i == len(init)-1 && n == "sidecar" {
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	for _, n := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n})
	}
	return pod
}

type smtError struct{}

func (smtError) Error() string {
	return "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
}
func (smtError) Type() string { return "SMTAlignmentError" }

func TestNewOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts topologymanager.Options
		err  string
	}{
		{"defaults", topologymanager.Options{NUMANodes: []int{0}}, ""},
		{"unknown policy", topologymanager.Options{Policy: "strict", NUMANodes: []int{0}},
			`unknown policy "strict" (allowed: none, best-effort, restricted, single-numa-node)`},
		{"unknown scope", topologymanager.Options{Scope: "node", NUMANodes: []int{0}},
			`unknown scope "node" (allowed: container, pod)`},
		{"unknown option", topologymanager.Options{PolicyOptions: map[string]string{"fast": "true"}, NUMANodes: []int{0}},
			`unknown Topology Manager Policy option: "fast"`},
		{"bad bool", topologymanager.Options{PolicyOptions: map[string]string{"prefer-closest-numa-nodes": "yes please"}, NUMANodes: []int{0}},
			`bad value for option "prefer-closest-numa-nodes"`},
		{"bad int", topologymanager.Options{PolicyOptions: map[string]string{"max-allowable-numa-nodes": "many"}, NUMANodes: []int{0}},
			`bad value for option "max-allowable-numa-nodes"`},
		{"no NUMA nodes", topologymanager.Options{}, "no NUMA nodes"},
		{"node out of range", topologymanager.Options{NUMANodes: []int{64}}, "NUMA node 64 out of range"},
		{"too many nodes", topologymanager.Options{Policy: "restricted", NUMANodes: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
			"unsupported on machines with more than 8 NUMA Nodes"},
		{"too many nodes is fine with policy none", topologymanager.Options{NUMANodes: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}}, ""},
		{"max-allowable-numa-nodes raised", topologymanager.Options{Policy: "restricted",
			PolicyOptions: map[string]string{"max-allowable-numa-nodes": "9"}, NUMANodes: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}}, ""},
		{"max-allowable-numa-nodes lowered", topologymanager.Options{Policy: "best-effort",
			PolicyOptions: map[string]string{"max-allowable-numa-nodes": "1"}, NUMANodes: []int{0, 1}},
			"unsupported on machines with more than 1 NUMA Nodes"},
		{"prefer-closest without distances", topologymanager.Options{Policy: "best-effort",
			PolicyOptions: map[string]string{"prefer-closest-numa-nodes": "true"}, NUMANodes: []int{0, 1}},
			`option "prefer-closest-numa-nodes" needs the distances from NUMA node 0`},
		{"prefer-closest with distances", topologymanager.Options{Policy: "best-effort",
			PolicyOptions: map[string]string{"prefer-closest-numa-nodes": "true"}, NUMANodes: []int{0, 1},
			Distances: map[int][]int{0: {10, 20}, 1: {20, 10}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := topologymanager.New(tc.opts)
			if tc.err == "" {
				require.NoError(t, err)
				require.NotNil(t, m)
				return
			}
			require.ErrorIs(t, err, topologymanager.ErrInvalidOptions)
			assert.ErrorContains(t, err, tc.err)
		})
	}
}

// setup returns a manager with a cpu and a gpu provider whose calls land in
// one log.
func setup(t *testing.T, policy, scope string) (*topologymanager.Manager, *topologymanagertest.Provider, *topologymanagertest.Provider, *[]string) {
	t.Helper()
	m, err := topologymanager.New(topologymanager.Options{Policy: policy, Scope: scope, NUMANodes: []int{0, 1}})
	require.NoError(t, err)
	var log []string
	rec := func(c topologymanagertest.Call) { log = append(log, c.String()) }
	cpu := &topologymanagertest.Provider{Name: "cpu", Store: m, OnCall: rec}
	gpu := &topologymanagertest.Provider{Name: "gpu", Store: m, OnCall: rec}
	m.AddHintProvider(cpu)
	m.AddHintProvider(gpu)
	return m, cpu, gpu, &log
}

func TestAdmitContainerScope(t *testing.T) {
	m, cpu, gpu, log := setup(t, topologymanager.PolicySingleNumaNode, topologymanager.ScopeContainer)
	cpu.ContainerHintsFunc = func(_ *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
		if c.Name == "app" {
			return map[string][]topologymanager.Hint{"cpu": {hint(true, 0), hint(true, 1), hint(false, 0, 1)}}
		}
		return nil
	}
	gpu.ContainerHintsFunc = func(_ *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
		if c.Name == "app" {
			return map[string][]topologymanager.Hint{"gpu": {hint(true, 1)}}
		}
		return nil
	}
	pod := newPod("p1", []string{"init", "sidecar"}, "app")
	ok, reason, msg := m.Admit(pod, nil)
	require.True(t, ok, "%s: %s", reason, msg)
	assert.Equal(t, []string{
		"cpu ContainerHints p1/init", "gpu ContainerHints p1/init",
		"cpu Allocate p1/init any preferred", "gpu Allocate p1/init any preferred",
		"cpu ContainerHints p1/sidecar", "gpu ContainerHints p1/sidecar",
		"cpu Allocate p1/sidecar any preferred", "gpu Allocate p1/sidecar any preferred",
		"cpu ContainerHints p1/app", "gpu ContainerHints p1/app",
		"cpu Allocate p1/app {1} preferred", "gpu Allocate p1/app {1} preferred",
	}, *log)
	assert.Equal(t, hint(true, 1), m.Affinity("p1", "app"))
	assert.Equal(t, topologymanager.Hint{Preferred: true}, m.Affinity("p1", "init"))
	m.RemovePod("p1")
	assert.Equal(t, topologymanager.Hint{}, m.Affinity("p1", "app"))
	assert.Equal(t, 0, m.Pods())
}

func TestAdmitContainerScopeRefusal(t *testing.T) {
	m, cpu, gpu, log := setup(t, topologymanager.PolicyRestricted, topologymanager.ScopeContainer)
	cpu.ContainerHintsFunc = func(_ *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
		return map[string][]topologymanager.Hint{"cpu": {hint(true, 0)}}
	}
	gpu.ContainerHintsFunc = func(_ *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
		if c.Name == "b" {
			return map[string][]topologymanager.Hint{"gpu": {hint(true, 1)}}
		}
		return nil
	}
	ok, reason, msg := m.Admit(newPod("p1", nil, "a", "b"), nil)
	assert.False(t, ok)
	assert.Equal(t, "TopologyAffinityError", reason)
	assert.Equal(t, "Resources cannot be allocated with Topology locality", msg)
	assert.Equal(t, []string{
		"cpu ContainerHints p1/a", "gpu ContainerHints p1/a",
		"cpu Allocate p1/a {0} preferred", "gpu Allocate p1/a {0} preferred",
		"cpu ContainerHints p1/b", "gpu ContainerHints p1/b",
	}, *log)
	// What was recorded for a is forgotten.
	assert.Equal(t, topologymanager.Hint{}, m.Affinity("p1", "a"))
	assert.Equal(t, 0, m.Pods())
}

func TestAdmitPodScope(t *testing.T) {
	m, cpu, gpu, log := setup(t, topologymanager.PolicyRestricted, topologymanager.ScopePod)
	cpu.PodHintsFunc = func(*v1.Pod) map[string][]topologymanager.Hint {
		return map[string][]topologymanager.Hint{"cpu": {hint(true, 0), hint(true, 1), hint(false, 0, 1)}}
	}
	gpu.PodHintsFunc = func(*v1.Pod) map[string][]topologymanager.Hint {
		return map[string][]topologymanager.Hint{"gpu": {hint(true, 1)}}
	}
	ok, _, _ := m.Admit(newPod("p1", []string{"init"}, "a", "b"), nil)
	require.True(t, ok)
	assert.Equal(t, []string{
		"cpu PodHints p1", "gpu PodHints p1",
		"cpu Allocate p1/init {1} preferred", "gpu Allocate p1/init {1} preferred",
		"cpu Allocate p1/a {1} preferred", "gpu Allocate p1/a {1} preferred",
		"cpu Allocate p1/b {1} preferred", "gpu Allocate p1/b {1} preferred",
	}, *log)
	assert.Equal(t, hint(true, 1), m.Affinity("p1", "b"))

	*log = nil
	gpu.PodHintsFunc = func(*v1.Pod) map[string][]topologymanager.Hint {
		return map[string][]topologymanager.Hint{"gpu": {}}
	}
	ok, reason, _ := m.Admit(newPod("p2", nil, "a"), nil)
	assert.False(t, ok)
	assert.Equal(t, "TopologyAffinityError", reason)
	assert.Equal(t, []string{"cpu PodHints p2", "gpu PodHints p2"}, *log)
	assert.Equal(t, 1, m.Pods())
}

func TestAdmitAllocateErrors(t *testing.T) {
	for _, tc := range []struct {
		name            string
		err             error
		reason, message string
	}{
		{"admission error", smtError{}, "SMTAlignmentError", "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"},
		{"wrapped admission error", fmt.Errorf("allocate cpus: %w", smtError{}), "SMTAlignmentError", "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"},
		{"plain error", errors.New("not enough cpus available to satisfy request: requested=4, available=2"),
			"UnexpectedAdmissionError", "Allocate failed due to not enough cpus available to satisfy request: requested=4, available=2, which is unexpected"},
	} {
		for _, policy := range []string{topologymanager.PolicyNone, topologymanager.PolicyBestEffort} {
			for _, scope := range []string{topologymanager.ScopeContainer, topologymanager.ScopePod} {
				t.Run(tc.name+"/"+policy+"/"+scope, func(t *testing.T) {
					m, cpu, gpu, log := setup(t, policy, scope)
					cpu.AllocateFunc = func(_ *v1.Pod, c *v1.Container) error {
						if c.Name == "b" {
							return tc.err
						}
						return nil
					}
					ok, reason, msg := m.Admit(newPod("p1", nil, "a", "b", "c"), nil)
					assert.False(t, ok)
					assert.Equal(t, tc.reason, reason)
					assert.Equal(t, tc.message, msg)
					// gpu never allocates for b, nobody for c.
					assert.Len(t, gpu.Calls(), map[string]int{"none": 1, "container": 3, "pod": 2}[policyScope(policy, scope)])
					assert.NotContains(t, *log, "cpu Allocate p1/c")
					assert.Equal(t, 0, m.Pods())
				})
			}
		}
	}
}

func policyScope(policy, scope string) string {
	if policy == topologymanager.PolicyNone {
		return "none"
	}
	return scope
}

func TestAdmitPolicyNone(t *testing.T) {
	m, cpu, _, log := setup(t, topologymanager.PolicyNone, topologymanager.ScopePod)
	cpu.ContainerHintsFunc = func(*v1.Pod, *v1.Container) map[string][]topologymanager.Hint {
		return map[string][]topologymanager.Hint{"cpu": {}}
	}
	ok, _, _ := m.Admit(newPod("p1", []string{"init"}, "a"), nil)
	require.True(t, ok)
	// No hints asked, nothing recorded: the providers read the zero Hint.
	assert.Equal(t, []string{
		"cpu Allocate p1/init any not preferred", "gpu Allocate p1/init any not preferred",
		"cpu Allocate p1/a any not preferred", "gpu Allocate p1/a any not preferred",
	}, *log)
	assert.Equal(t, 0, m.Pods())
}

func TestAdmitResult(t *testing.T) {
	ok, reason, msg := topologymanager.AdmitResult(nil)
	assert.True(t, ok)
	assert.Empty(t, reason+msg)
	ok, reason, msg = topologymanager.AdmitResult(topologymanager.TopologyAffinityError{})
	assert.False(t, ok)
	assert.Equal(t, "TopologyAffinityError", reason)
	assert.Equal(t, "Resources cannot be allocated with Topology locality", msg)
}
