package apiserver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	crifake "github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/localstate"
)

// A restartPolicy Never pod that completed is not run again when the agent
// restarts on a runtime that lost it (a new fake runtime here): whether its
// terminal status reached the API server or is kept in the local state as
// unacknowledged, and whether the API server answers at the restart or
// not. Without a local state, the API server's copy says it.
func TestACompletedPodIsNotRunAgainAfterARestart(t *testing.T) {
	// See TestJoinedAgentRunsItsLocalStateWhileTheAPIServerIsAway.
	handlers := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = handlers[:1]
	t.Cleanup(func() { utilruntime.ErrorHandlers = handlers })
	for _, tc := range []struct {
		name string
		// noLocalState runs the agent without a local state.
		noLocalState bool
		// downWhenDone cuts the API server off before the pod completes:
		// its terminal status is kept as unacknowledged.
		downWhenDone bool
		// staleKept mutes the watch of pods, so that the pod source keeps
		// the pod as first listed: as when the agent is killed after the
		// API server acknowledged the terminal status and before its
		// watch told the pod source.
		staleKept bool
		// neverReported puts back the pod as created, on the API server
		// and in the local state: the API server went away before any
		// status of the pod reached it.
		neverReported bool
		// downAtRestart keeps the API server away when the agent restarts.
		downAtRestart bool
	}{
		{name: "acknowledged, API server away at the restart", downAtRestart: true},
		{name: "acknowledged, API server back at the restart"},
		{name: "acknowledged, kept copy stale, API server away at the restart", staleKept: true, downAtRestart: true},
		{name: "unacknowledged, API server away at the restart", downWhenDone: true, downAtRestart: true},
		{name: "unacknowledged, API server back at the restart", downWhenDone: true},
		{name: "unacknowledged, never reported running, API server away at the restart", downWhenDone: true, neverReported: true, downAtRestart: true},
		{name: "unacknowledged, never reported running, API server back at the restart", downWhenDone: true, neverReported: true},
		{name: "no local state, acknowledged", noLocalState: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				job := apiPod("default", "job", "u-job", "n1")
				job.Spec.RestartPolicy = v1.RestartPolicyNever
				job.Spec.Containers[0].Command = []string{"work"}
				client := fake.NewClientset(job)
				allowAll(client, "")
				var muted atomic.Bool // a watch of pods tells nothing
				muted.Store(tc.staleKept)
				client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
					if muted.Load() {
						return true, watch.NewFake(), nil
					}
					return false, nil, nil
				})
				down := cutOff(client)
				rules := []crifake.Rule{{CommandPrefix: []string{"work"}, Behavior: crifake.Behavior{Outcome: crifake.Exit, RunFor: 20 * time.Second}}}
				var st *localstate.State
				if !tc.noLocalState {
					st = newState(t)
				}
				root := t.TempDir()

				// The pod runs, and completes.
				rt := crifake.New(crifake.Options{Rules: rules})
				defer rt.Close()
				_, _, stop := runJoined(t, client, st, rt, root)
				time.Sleep(10 * time.Second)
				synctest.Wait()
				running, _ := keptContainersOf(t, rt, "job")
				require.Len(t, running, 1, "the pod runs")
				down.Store(tc.downWhenDone)
				time.Sleep(30 * time.Second)
				synctest.Wait()
				stop()
				running, all := keptContainersOf(t, rt, "job")
				require.Empty(t, running, "the pod completed")
				require.Len(t, all, 1)
				if tc.neverReported {
					created := job.DeepCopy()
					created.ResourceVersion = "100"
					require.NoError(t, client.Tracker().Update(v1.SchemeGroupVersion.WithResource("pods"), created, "default"))
					_, err := st.SetPods([]*v1.Pod{created})
					require.NoError(t, err)
				}

				// The agent restarts on a runtime that lost the pod.
				down.Store(tc.downAtRestart)
				rt2 := crifake.New(crifake.Options{Rules: rules})
				defer rt2.Close()
				a, _, stop := runJoined(t, client, st, rt2, root)
				time.Sleep(time.Minute)
				synctest.Wait()
				_, all = keptContainersOf(t, rt2, "job")
				assert.Empty(t, all, "the completed pod is not run again")
				if p := statusOf(a, "job"); p != nil {
					assert.Equal(t, v1.PodSucceeded, p.Status.Phase, "the node's status of the pod")
				}
				if tc.downAtRestart {
					down.Store(false)
					time.Sleep(3 * time.Minute)
					synctest.Wait()
					_, all = keptContainersOf(t, rt2, "job")
					assert.Empty(t, all, "nor when the API server answers")
				}
				stop()
				got, err := client.CoreV1().Pods("default").Get(context.Background(), "job", metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, v1.PodSucceeded, got.Status.Phase, "the API server's copy")
				require.Len(t, got.Status.ContainerStatuses, 1)
				term := got.Status.ContainerStatuses[0].State.Terminated
				require.NotNil(t, term, "the container's state on the API server")
				assert.Equal(t, "Completed", term.Reason, "the container's own end, not one made up for a lost container")
			})
		})
	}
}
