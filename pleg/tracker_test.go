package pleg

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

func listedSandbox(uid types.UID, id string, st runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: st, Metadata: &runtimeapi.PodSandboxMetadata{Uid: string(uid), Name: "n-" + string(uid), Namespace: "ns"}}
}

func listedContainer(uid types.UID, sandbox, id string, st runtimeapi.ContainerState) *runtimeapi.Container {
	c := &runtimeapi.Container{Id: id, PodSandboxId: sandbox, State: st}
	if uid != "" {
		c.Labels = cri.ContainerLabels(uid, "n-"+string(uid), "ns", id)
	}
	return c
}

// step observes the lists, returns the diff, and commits every pod in it
// except those in fail.
func step(tr *tracker, sbs []*runtimeapi.PodSandbox, cs []*runtimeapi.Container, fail ...types.UID) []Event {
	tr.observe(sbs, cs)
	evs := tr.diff(nil)
	for _, e := range evs {
		if !slices.Contains(fail, e.PodUID) {
			tr.commit(e.PodUID)
		}
	}
	return evs
}

func TestTrackerIgnoresListOrder(t *testing.T) {
	tr := newTracker()
	sbs := []*runtimeapi.PodSandbox{listedSandbox("a", "sa", ready), listedSandbox("b", "sb", ready)}
	cs := []*runtimeapi.Container{
		listedContainer("a", "sa", "a1", running), listedContainer("a", "sa", "a2", running),
		listedContainer("b", "sb", "b1", running),
	}
	require.Len(t, step(tr, sbs, cs), 5)
	for range 3 {
		slices.Reverse(sbs)
		slices.Reverse(cs)
		assert.Empty(t, step(tr, sbs, cs), "the same objects in another order are no change")
	}
	// A changed object at a position whose ID moved is still found.
	cs = []*runtimeapi.Container{listedContainer("b", "sb", "b1", exited), listedContainer("a", "sa", "a2", running), listedContainer("a", "sa", "a1", running)}
	assert.Equal(t, []Event{{PodUID: "b", Type: ContainerDied, ContainerID: "b1"}}, step(tr, sbs, cs))
}

func TestTrackerAssignsObjectsToPods(t *testing.T) {
	tr := newTracker()
	sbs := []*runtimeapi.PodSandbox{
		listedSandbox("a", "sa", ready),
		{Id: "labelled", State: ready, Labels: cri.PodLabels("b", "n-b", "ns")}, // no metadata UID
		{Id: "foreign", State: ready},                                           // not a kubelet's
	}
	cs := []*runtimeapi.Container{
		listedContainer("", "sa", "unlabelled", running), // joins its sandbox's pod
		listedContainer("", "nowhere", "orphan", running),
	}
	evs := step(tr, sbs, cs)
	assert.Equal(t, []Event{
		{PodUID: "a", Type: ContainerStarted, ContainerID: "unlabelled"},
		{PodUID: "a", Type: ContainerStarted, ContainerID: "sa", Sandbox: true},
		{PodUID: "b", Type: ContainerStarted, ContainerID: "labelled", Sandbox: true},
	}, evs)
	_, p, ok := tr.pod(nil, "a")
	require.True(t, ok)
	assert.Equal(t, "n-a", p.name)
	assert.Equal(t, "ns", p.namespace)
	assert.Equal(t, []string{"sa"}, p.sandboxes)
	assert.Equal(t, []string{"unlabelled"}, p.containers)
	assert.Equal(t, 2, tr.len())
	// Observing the same lists again (positions cached) changes nothing.
	assert.Empty(t, step(tr, sbs, cs))
}

func TestTrackerUncommittedPodsKeepTheirChanges(t *testing.T) {
	tr := newTracker()
	sbs := []*runtimeapi.PodSandbox{listedSandbox("a", "sa", ready)}
	step(tr, sbs, []*runtimeapi.Container{listedContainer("a", "sa", "a1", running)})

	exitedNow := []*runtimeapi.Container{listedContainer("a", "sa", "a1", exited)}
	died := []Event{{PodUID: "a", Type: ContainerDied, ContainerID: "a1"}}
	assert.Equal(t, died, step(tr, sbs, exitedNow, "a"), "not committed")
	assert.Equal(t, died, step(tr, sbs, exitedNow), "found again")
	assert.Empty(t, step(tr, sbs, exitedNow))
}

func TestTrackerReusesRecords(t *testing.T) {
	tr := newTracker()
	for i := range 3 * recordChunk {
		uid := types.UID(string(rune('a'+i%26)) + string(rune('A'+i/26)))
		sbs := []*runtimeapi.PodSandbox{listedSandbox(uid, "s"+string(uid), ready)}
		require.Len(t, step(tr, sbs, nil), 1, "a new pod")
		require.Len(t, step(tr, nil, nil), 2, "it goes: died and removed")
		require.Zero(t, tr.len())
		_, _, ok := tr.pod(nil, uid)
		require.False(t, ok)
	}
	assert.Len(t, tr.chunks, 1, "records of removed pods are reused")
}
