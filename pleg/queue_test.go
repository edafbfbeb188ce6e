package pleg

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

func ev(uid types.UID, typ EventType, id string) Event {
	return Event{PodUID: uid, Type: typ, ContainerID: id}
}

func drain(q *eventQueue) []Event {
	var out []Event
	for {
		e, ok := q.peek()
		if !ok {
			return out
		}
		q.pop()
		out = append(out, e)
	}
}

func TestEventQueue(t *testing.T) {
	many := func(uid types.UID, n int) []Event {
		var out []Event
		for i := range n {
			out = append(out, ev(uid, ContainerStarted, fmt.Sprintf("c%d", i)))
		}
		return out
	}
	tests := []struct {
		name          string
		push          []Event
		want          []Event
		wantCoalesced int
	}{
		{
			name: "pods in order of their first event, a pod's events together and in order",
			push: []Event{ev("a", ContainerStarted, "1"), ev("b", ContainerDied, "2"), ev("a", ContainerDied, "1")},
			want: []Event{ev("a", ContainerStarted, "1"), ev("a", ContainerDied, "1"), ev("b", ContainerDied, "2")},
		},
		{
			name:          "a duplicate of a pending event coalesces",
			push:          []Event{ev("a", ContainerStarted, "1"), ev("a", ContainerStarted, "1")},
			want:          []Event{ev("a", ContainerStarted, "1")},
			wantCoalesced: 1,
		},
		{
			name: "up to the limit, every event is kept",
			push: many("a", maxPendingPerPod),
			want: many("a", maxPendingPerPod),
		},
		{
			name:          "past the limit, the pod's events collapse into one PodSync",
			push:          append(many("a", maxPendingPerPod+1), ev("b", ContainerDied, "x")),
			want:          []Event{{PodUID: "a", Type: PodSync}, ev("b", ContainerDied, "x")},
			wantCoalesced: maxPendingPerPod,
		},
		{
			name:          "a collapsed pod absorbs further events until delivered",
			push:          append(many("a", maxPendingPerPod+1), ev("a", ContainerDied, "9"), ev("a", ContainerRemoved, "9")),
			want:          []Event{{PodUID: "a", Type: PodSync}},
			wantCoalesced: maxPendingPerPod + 2,
		},
		{
			name:          "a pushed PodSync replaces the pending events",
			push:          []Event{ev("a", ContainerStarted, "1"), {PodUID: "a", Type: PodSync}, ev("a", ContainerDied, "1")},
			want:          []Event{{PodUID: "a", Type: PodSync}},
			wantCoalesced: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newEventQueue()
			n := 0
			for _, e := range tt.push {
				n += q.push(e)
			}
			assert.Equal(t, tt.wantCoalesced, n)
			assert.Equal(t, tt.wantCoalesced, q.coalesced)
			assert.Equal(t, len(tt.want), q.len())
			assert.Equal(t, tt.want, drain(q))
			assert.Empty(t, q.pods, "a drained queue holds nothing")
		})
	}
}

// TestEventQueueBounded: however far behind the consumer is, the queue holds at
// most maxPendingPerPod events per pod, and a pod that gets events again after
// being drained starts afresh.
func TestEventQueueBounded(t *testing.T) {
	q := newEventQueue()
	const pods = 100
	for round := range 1000 {
		for p := range pods {
			q.push(ev(types.UID(fmt.Sprint(p)), ContainerStarted, fmt.Sprint(round)))
		}
	}
	assert.LessOrEqual(t, q.len(), pods*maxPendingPerPod)
	assert.Len(t, q.order[q.head:], pods)
	got := drain(q)
	require.Len(t, got, pods)
	for _, e := range got {
		assert.Equal(t, PodSync, e.Type)
	}
	q.push(ev("0", ContainerDied, "x"))
	assert.Equal(t, []Event{ev("0", ContainerDied, "x")}, drain(q))
	// The pod order slice is compacted as the head moves on.
	for i := range 1000 {
		q.push(ev(types.UID(fmt.Sprint(i)), ContainerDied, "x"))
		if i%2 == 1 {
			q.peek()
			q.pop()
		}
	}
	assert.LessOrEqual(t, len(q.order), 1000)
	assert.Len(t, drain(q), 500)
}

// TestOutboxSlowConsumer: a consumer that falls far behind loses nothing: for
// every pod it receives either every event pushed for it, in order, or a
// PodSync after the ones it already had.
func TestOutboxSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &recordingMetrics{}
		o := newOutbox(m, nil)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { o.deliver(ctx) })

		const pods, perPod = 50, 40
		pushed := map[types.UID][]Event{}
		got := map[types.UID][]Event{}
		take := func() {
			e := <-o.ch
			got[e.PodUID] = append(got[e.PodUID], e)
		}
		for i := range perPod {
			for p := range pods {
				uid := types.UID(fmt.Sprintf("pod-%02d", p))
				e := ev(uid, ContainerStarted, fmt.Sprintf("c%02d", i))
				pushed[uid] = append(pushed[uid], e)
				o.push(e)
			}
			if i == 3 { // the consumer takes a few events, then stalls
				for range 10 {
					take()
				}
			}
		}
		synctest.Wait()
		assert.LessOrEqual(t, o.pending(), pods*maxPendingPerPod, "memory is bounded by the number of pods")
		for o.pending() > 0 {
			take()
			synctest.Wait()
		}
		cancel()
		wg.Wait()
		_, open := <-o.ch
		assert.False(t, open, "the channel is closed when delivery stops")

		synced := 0
		for uid, evs := range got {
			last := evs[len(evs)-1]
			if last.Type == PodSync {
				synced++
				// What came before the PodSync is a prefix of what was pushed.
				assert.Equal(t, pushed[uid][:len(evs)-1], evs[:len(evs)-1], "pod %s", uid)
				continue
			}
			assert.Equal(t, pushed[uid], evs, "pod %s", uid)
		}
		assert.Equal(t, pods, synced, "every pod overflowed and got a PodSync")
		assert.Positive(t, m.coalesced())
	})
}
