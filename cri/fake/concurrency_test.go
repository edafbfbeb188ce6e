package fake_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// Many goroutines drive pod lifecycles, lists, execs and stats while
// another steps the fake clock (firing scripted exits and ending stop
// waits) and a subscriber follows the events: run it with -race. It also
// checks that the clock's callbacks and the runtime's lock never deadlock.
func TestConcurrencySmoke(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{
		{Name: "crash", Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1, RunFor: 3 * time.Second}},
		{Name: "stubborn", Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}},
		{Name: "slow", Behavior: fake.Behavior{OnSIGTERM: fake.ExitOnSIGTERM, ShutdownTime: 2 * time.Second}},
	}, ExecRules: []fake.ExecRule{{Command: []string{"probe"}, Duration: time.Second}}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var events sync.WaitGroup
	events.Go(func() {
		for _, err := range e.rt.GetContainerEvents(ctx) {
			if err != nil {
				assert.ErrorIs(t, err, fake.ErrEventsLost)
				return
			}
		}
	})

	workersDone := make(chan struct{})
	var stepper sync.WaitGroup
	stepper.Go(func() {
		for {
			select {
			case <-workersDone:
				return
			default:
			}
			e.clk.Step(500 * time.Millisecond)
			runtime.Gosched()
		}
	})

	const workers, rounds = 16, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				cfg := podConfig(fmt.Sprintf("p%d-%d", w, i))
				sb, err := e.rt.RunPodSandbox(ctx, cfg, "")
				if !assert.NoError(t, err) {
					return
				}
				var ids []string
				for _, name := range []string{"crash", "stubborn", "slow", "plain"} {
					id, err := e.rt.CreateContainer(ctx, sb, containerConfig(name, "busybox"), cfg)
					if !assert.NoError(t, err) {
						return
					}
					assert.NoError(t, e.rt.StartContainer(ctx, id))
					ids = append(ids, id)
				}
				_, err = e.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sb})
				assert.NoError(t, err)
				_, err = e.rt.ListPodSandbox(ctx, nil)
				assert.NoError(t, err)
				_, err = e.rt.ListContainerStats(ctx, nil)
				assert.NoError(t, err)
				_, err = e.rt.ExecSync(ctx, ids[3], []string{"probe"}, 5*time.Second)
				assert.NoError(t, err)
				for _, id := range ids {
					assert.NoError(t, e.rt.StopContainer(ctx, id, 2))
				}
				for _, id := range ids {
					st, err := e.rt.ContainerStatus(ctx, id, false)
					if assert.NoError(t, err) {
						assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.Status.State)
					}
				}
				assert.NoError(t, e.rt.RemovePodSandbox(ctx, sb))
			}
		})
	}
	wg.Wait()
	close(workersDone)
	stepper.Wait()
	cancel()
	events.Wait()

	assert.Empty(t, e.rt.Sandboxes())
	assert.Empty(t, e.rt.Containers())
	assert.Len(t, e.rt.CallsOf(fake.RunPodSandbox), workers*rounds)
}
