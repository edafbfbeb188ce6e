package pleg

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
)

// InspectPod refreshes one pod's entry at once, so a waiter for a status
// newer than an earlier time is released without a relist; the next relist
// still delivers the change, as the PLEG has not reported it yet.
func TestInspectPod(t *testing.T) {
	for _, evented := range []bool{false, true} {
		name := "generic"
		if evented {
			name = "evented"
		}
		t.Run(name, func(t *testing.T) { inspectPodCase(t, evented) })
	}
}

func inspectPodCase(t *testing.T, evented bool) {
	errRuntime := errors.New("runtime is down")
	rt := newStub()
	addPod(rt, "p1")
	addPod(rt, "p2")
	clk := clocktesting.NewFakeClock(t0)
	var (
		mu     sync.Mutex
		events []Event
	)
	// Called from the relist's parallel inspections.
	onEvents := func(evs []Event) { mu.Lock(); events = append(events, evs...); mu.Unlock() }
	var p interface {
		Relist(context.Context) error
		Cache() *Cache
		InspectPod(ctx context.Context, uid types.UID, name, namespace string) (*cri.PodStatus, error)
	}
	var err error
	if evented {
		p, err = NewEvented(EventedOptions{Runtime: rt, Clock: clk, OnEvents: onEvents})
	} else {
		p, err = NewGeneric(GenericOptions{Runtime: rt, Clock: clk, OnEvents: onEvents})
	}
	require.NoError(t, err)
	inspect := func(ctx context.Context, uid types.UID, name, namespace string) error {
		_, err := p.InspectPod(ctx, uid, name, namespace)
		return err
	}
	require.NoError(t, p.Relist(t.Context()))
	events = nil

	clk.Step(10 * time.Millisecond)
	rt.setContainerState("p1-c", exited)
	require.NoError(t, inspect(t.Context(), "p1", "name-p1", "ns"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no waiting: the status must be there already
	st, err := p.Cache().GetNewerThan(ctx, "p1", t0.Add(time.Millisecond))
	require.NoError(t, err)
	_, err = p.Cache().GetNewerThan(ctx, "p2", t0.Add(time.Millisecond))
	require.ErrorIs(t, err, context.Canceled, "only the pod asked for is read")
	assert.Equal(t, exited, st.ContainerByName("main").GetState())
	assert.Equal(t, t0.Add(10*time.Millisecond), st.Timestamp)
	assert.Equal(t, "name-p1", st.Name)
	assert.Equal(t, []string{"10.0.0.1"}, st.IPs)
	assert.Empty(t, events, "an inspection delivers no event")

	require.NoError(t, p.Relist(t.Context()))
	assert.Equal(t, []Event{{PodUID: "p1", Type: ContainerDied, ContainerID: "p1-c"}}, events)

	// A failed inspection is stored as the pod's error and returned.
	clk.Step(10 * time.Millisecond)
	rt.setListErr(errRuntime)
	err = inspect(t.Context(), "p1", "name-p1", "ns")
	require.ErrorIs(t, err, errRuntime)
	_, err = p.Cache().Get("p1")
	assert.ErrorIs(t, err, errRuntime)
}
