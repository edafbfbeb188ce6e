package agenttest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// shutdownPod is a pod of the node that shuts down: its priority (nil:
// unset), its terminationGracePeriodSeconds, how its container answers
// SIGTERM, and when its container should have stopped, counted from the
// beginning of the shutdown.
type shutdownPod struct {
	name     string
	priority *int32
	grace    int64
	behavior fake.Behavior
	stopped  time.Duration
	// succeeds: its container handles SIGTERM and exits 0, and the pod
	// ends Succeeded, as upstream's (the DisruptionTarget condition, no
	// reason).
	succeeds bool
}

// A whole node shuts down: the node turns NotReady with upstream's
// message, refuses a pod that arrives meanwhile, and terminates its pods
// group by group in priority order, each with the group's grace period (or
// its own where shorter), the next group starting when the previous one has
// stopped or spent its budget; every pod ends Failed with reason Terminated
// and a DisruptionTarget condition, and a pod that had already succeeded
// keeps its status.
func TestGracefulShutdown(t *testing.T) {
	ignore := fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}
	dies := fake.Behavior{OnSIGTERM: fake.DieOnSIGTERM} // exit code 143 at once
	exits := fake.Behavior{OnSIGTERM: fake.ExitOnSIGTERM, ShutdownTime: 2 * time.Second}
	critical := ptr.To(podspec.SystemCriticalPriority)
	tests := []struct {
		name     string
		opts     agent.ShutdownOptions
		pods     []shutdownPod
		duration time.Duration // until Shutdown returns
	}{{
		name: "30s, 10s of them for critical pods",
		opts: agent.ShutdownOptions{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
		pods: []shutdownPod{
			{"web", nil, 60, ignore, 20 * time.Second, false},                 // the group's 20s
			{"batch", ptr.To[int32](1000), 5, ignore, 5 * time.Second, false}, // its own 5s
			{"quick", nil, 30, dies, 0, false},
			{"graceful", nil, 30, exits, 2 * time.Second, true},
			{"dns", critical, 30, ignore, 30 * time.Second, false}, // 10s, after the others' 20s
			{"proxy", critical, 30, dies, 20 * time.Second, false},
		},
		duration: 30 * time.Second,
	}, {
		name: "ordinary pods that stop early hand over to the critical ones at once",
		opts: agent.ShutdownOptions{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
		pods: []shutdownPod{
			{"web", nil, 60, dies, 0, false},
			{"dns", critical, 30, ignore, 10 * time.Second, false},
		},
		duration: 10 * time.Second,
	}, {
		name: "by pod priority: three groups",
		opts: agent.ShutdownOptions{ByPodPriority: []nodeshutdown.PriorityGracePeriod{
			{Priority: 0, GracePeriodSeconds: 10}, {Priority: 10000, GracePeriodSeconds: 20}, {Priority: podspec.SystemCriticalPriority, GracePeriodSeconds: 5}}},
		pods: []shutdownPod{
			{"low", nil, 30, ignore, 10 * time.Second, false},
			{"mid", ptr.To[int32](10000), 30, ignore, 30 * time.Second, false},
			{"high", critical, 30, ignore, 35 * time.Second, false},
		},
		duration: 35 * time.Second,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rules []fake.Rule
				for _, p := range tc.pods {
					rules = append(rules, fake.Rule{Name: p.name, Behavior: p.behavior})
				}
				n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Shutdown: tc.opts}, Rules: rules})
				for _, p := range tc.pods {
					pod := pod(p.name, container(p.name, "sleep", "3600"))
					pod.Spec.Priority = p.priority
					pod.Spec.TerminationGracePeriodSeconds = ptr.To(p.grace)
					n.AddPod(pod)
				}
				once := pod("once", container("once", "true"))
				once.Spec.RestartPolicy = v1.RestartPolicyNever
				n.Runtime().SetRules(append(rules, fake.Rule{Name: "once", Behavior: fake.Behavior{Outcome: fake.Exit}}))
				n.AddPod(once)
				n.Step(20 * time.Second)
				for _, p := range tc.pods {
					require.Equal(t, v1.PodRunning, n.Pod("default", p.name).Status.Phase, p.name)
				}
				require.Equal(t, v1.PodSucceeded, n.Pod("default", "once").Status.Phase)
				st, ok := n.Agent().NodeStatus()
				require.True(t, ok)
				require.Equal(t, v1.ConditionTrue, nodeReady(st).Status)

				start := n.Now()
				var took time.Duration
				done := make(chan error, 1)
				go func() {
					err := n.Agent().Shutdown(context.Background())
					took = n.Now().Sub(start)
					done <- err
				}()
				n.Settle()

				st, _ = n.Agent().NodeStatus()
				ready := nodeReady(st)
				assert.Equal(t, v1.ConditionFalse, ready.Status, "the node is NotReady as soon as the shutdown begins")
				assert.Equal(t, "KubeletNotReady", ready.Reason)
				assert.Equal(t, "node is shutting down", ready.Message)
				assert.Contains(t, n.Events(), agenttest.Event{Time: start, Object: "Node node1", Type: v1.EventTypeNormal,
					Reason: "Shutdown", Message: "Shutdown manager detected shutdown event"})

				late := n.AddPod(pod("late", container("late", "sleep", "3600")))
				n.Step(time.Second)
				late = n.Pod("default", late.Name)
				assert.Equal(t, v1.PodFailed, late.Status.Phase)
				assert.Equal(t, "NodeShutdown", late.Status.Reason)
				assert.Equal(t, "Pod was rejected: Pod was rejected as the node is shutting down.", late.Status.Message)

				require.True(t, n.StepUntil(time.Minute, func() bool { return len(done) == 1 }), "Shutdown did not return")
				require.NoError(t, <-done)
				assert.Equal(t, tc.duration, took, "how long the shutdown took")
				<-n.Agent().ShutdownDone()
				n.Step(10 * time.Second)

				for _, p := range tc.pods {
					got := n.Pod("default", p.name)
					if p.succeeds {
						assert.Equal(t, v1.PodSucceeded, got.Status.Phase, p.name)
						assert.Empty(t, got.Status.Reason, p.name)
						assert.Empty(t, got.Status.Message, p.name)
					} else {
						assert.Equal(t, v1.PodFailed, got.Status.Phase, p.name)
						assert.Equal(t, "Terminated", got.Status.Reason, p.name)
						assert.Equal(t, "Pod was terminated in response to imminent node shutdown.", got.Status.Message, p.name)
					}
					c := podCondition(got, v1.DisruptionTarget)
					if assert.NotNil(t, c, p.name) {
						assert.Equal(t, v1.ConditionTrue, c.Status, p.name)
						assert.Equal(t, "TerminationByKubelet", c.Reason, p.name)
						assert.Equal(t, "Pod was terminated in response to imminent node shutdown.", c.Message, p.name)
					}
					require.Len(t, got.Status.ContainerStatuses, 1, p.name)
					term := got.Status.ContainerStatuses[0].State.Terminated
					if assert.NotNil(t, term, p.name) {
						assert.Equal(t, p.stopped, term.FinishedAt.Sub(start), "%s: when its container stopped", p.name)
						assert.Equal(t, int32(0), got.Status.ContainerStatuses[0].RestartCount, p.name)
					}
				}
				gotOnce := n.Pod("default", "once")
				assert.Equal(t, v1.PodSucceeded, gotOnce.Status.Phase, "a pod that had succeeded is left alone")
				assert.Nil(t, podCondition(gotOnce, v1.DisruptionTarget))

				// Called off: the node is Ready again and admits pods;
				// the pods terminated stay so.
				n.Agent().CancelShutdown()
				n.Step(10 * time.Second)
				st, _ = n.Agent().NodeStatus()
				assert.Equal(t, v1.ConditionTrue, nodeReady(st).Status)
				n.AddPod(pod("after", container("after", "sleep", "3600")))
				n.Step(5 * time.Second)
				assert.Equal(t, v1.PodRunning, n.Pod("default", "after").Status.Phase)
				assert.Equal(t, v1.PodFailed, n.Pod("default", tc.pods[0].name).Status.Phase, "still terminated")
			})
		})
	}
}

// Without a grace period (upstream's default), a shutdown does nothing:
// the pods run on and new ones are admitted.
func TestShutdownDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		n.AddPod(pod("web", container("web", "sleep", "3600")))
		n.Step(5 * time.Second)
		require.NoError(t, n.Agent().Shutdown(context.Background()))
		n.AddPod(pod("late", container("late", "sleep", "3600")))
		n.Step(5 * time.Second)
		assert.Equal(t, v1.PodRunning, n.Pod("default", "web").Status.Phase)
		assert.Equal(t, v1.PodRunning, n.Pod("default", "late").Status.Phase)
		st, _ := n.Agent().NodeStatus()
		assert.Equal(t, v1.ConditionTrue, nodeReady(st).Status)
	})
}

func nodeReady(st v1.NodeStatus) v1.NodeCondition {
	for _, c := range st.Conditions {
		if c.Type == v1.NodeReady {
			return c
		}
	}
	return v1.NodeCondition{}
}

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
