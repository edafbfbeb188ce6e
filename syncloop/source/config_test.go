package source_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

func TestConfigMergesSourcesInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c := source.NewConfig(source.ConfigOptions{NodeName: "n1"})
	defer c.Wait()
	defer cancel()
	files := c.Channel(ctx, file)
	assert.Equal(t, files, c.Channel(ctx, file), "one channel per source")
	apis := c.Channel(ctx, api)

	files <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: "whatever", Pods: pods(apiPod("f1"), apiPod("f2"))}
	assert.Equal(t, "ADD file f1,f2", describeOne(receive(t, c.Updates())))
	apis <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("a1"))}
	assert.Equal(t, "ADD api a1", describeOne(receive(t, c.Updates())))
	files <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("f2", withImage("x:2")), apiPod("f3"), apiPod("f4", withPhase(v1.PodRunning)))}
	assert.Equal(t, "REMOVE file f1", describeOne(receive(t, c.Updates())))
	assert.Equal(t, "ADD file f3,f4", describeOne(receive(t, c.Updates())))
	assert.Equal(t, "UPDATE file f2", describeOne(receive(t, c.Updates())))
	apis <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("a1"))}
	apis <- syncloop.PodUpdate{Op: syncloop.OpRemove, Pods: pods(apiPod("a1"))}
	assert.Equal(t, "REMOVE api a1", describeOne(receive(t, c.Updates())), "an unchanged SET sends nothing")
	nothing(t, c.Updates())
}

func TestConfigSeenAllSources(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c := source.NewConfig(source.ConfigOptions{})
	defer c.Wait()
	defer cancel()
	assert.True(t, c.SeenAllSources(), "no source at all")
	assert.False(t, c.SeenAllSources(file), "an expected source that never sent")

	files := c.Channel(ctx, file)
	apis := c.Channel(ctx, api)
	assert.False(t, c.SeenAllSources(file, api))
	files <- syncloop.PodUpdate{Op: syncloop.OpSet} // empty: counts, sends nothing
	apis <- syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: pods(apiPod("a"))}
	receive(t, c.Updates())
	assert.False(t, c.SeenAllSources(file), "api is registered and has not sent a SET")
	assert.False(t, c.SeenAllSources(file, api), "an ADD is not a SET")
	assert.False(t, c.SeenAllSources(syncloop.SourceAll))
	apis <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("a"))}
	eventually(t, "the api SET is merged", func() bool { return c.SeenAllSources(file, api) })
	assert.True(t, c.SeenAllSources(syncloop.SourceAll))
	assert.False(t, c.SeenAllSources(file, api, web), "http is expected and never sent")
}

func TestConfigNeverBlocksAfterContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c := source.NewConfig(source.ConfigOptions{})
	ch := c.Channel(ctx, api)
	// Nobody reads Updates: fill its buffer, then one more message blocks
	// in delivery.
	for i := range source.UpdatesBuffer + 1 {
		ch <- syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: pods(apiPod(fmt.Sprint("p", i)))}
	}
	cancel()
	c.Wait() // returns: the blocked delivery gave up
	assert.Len(t, c.Updates(), source.UpdatesBuffer)
}

func TestConfigConcurrentSources(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c := source.NewConfig(source.ConfigOptions{})
	defer c.Wait()
	defer cancel()
	const sources, rounds = 4, 50
	var wg sync.WaitGroup
	for s := range sources {
		name := fmt.Sprint("src", s)
		ch := c.Channel(ctx, name)
		wg.Go(func() {
			for r := range rounds {
				p := apiPod(fmt.Sprintf("%s-p%d", name, r%3), withImage(fmt.Sprint("img:", r)))
				ch <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(p)}
			}
		})
	}
	adds := map[string]int{}
	removes := map[string]int{}
	// Each source sends 50 SETs of one pod whose name (and UID) changes every
	// round: 50 ADD and 49 REMOVE.
	for range sources * (rounds + rounds - 1) {
		u := receive(t, c.Updates())
		require.Len(t, u.Pods, 1)
		switch u.Op {
		case syncloop.OpAdd:
			adds[u.Source]++
		case syncloop.OpRemove:
			removes[u.Source]++
		default:
			t.Fatalf("unexpected %s", describeOne(u))
		}
	}
	wg.Wait()
	for s := range sources {
		name := fmt.Sprint("src", s)
		assert.Equal(t, rounds, adds[name], name)
		assert.Equal(t, rounds-1, removes[name], name)
	}
	assert.True(t, c.SeenAllSources(syncloop.SourceAll))
}

func TestConfigSourceWaitingForItsTurnGivesUpWithItsContext(t *testing.T) {
	c := source.NewConfig(source.ConfigOptions{})
	for i := range source.UpdatesBuffer { // nobody reads: the buffer is full
		c.Merge(t.Context(), "a", syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: pods(apiPod(fmt.Sprint("a", i)))})
	}
	ctxB, cancelB := context.WithCancel(t.Context())
	mergedB := make(chan struct{})
	go func() {
		defer close(mergedB)
		c.Merge(ctxB, "b", syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("b"))})
	}()
	// b's SET is merged, so b holds the turn, blocked delivering its ADD.
	eventually(t, "b's SET is merged", func() bool { return c.SeenAllSources("b") })

	ctxC, cancelC := context.WithCancel(t.Context())
	mergedC := make(chan struct{})
	go func() {
		defer close(mergedC)
		c.Merge(ctxC, "c", syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods(apiPod("c"))})
	}()
	cancelC()
	receive(t, mergedC) // c gave up waiting for its turn while b is still blocked
	assert.False(t, c.SeenAllSources("c"), "c's message was dropped")
	nothing(t, mergedB)

	cancelB()
	receive(t, mergedB)
	assert.Len(t, c.Updates(), source.UpdatesBuffer)
}
