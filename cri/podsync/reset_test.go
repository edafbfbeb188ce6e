package podsync_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

// RestartAllContainers (upstream's RestartAllContainersOnContainerExits,
// beta and on by default since 1.36): a container whose exit a rule with
// that action matches restarts every container of its pod in place.

var restartAllOn42 = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
	ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}

func restartsAll(c v1.Container) v1.Container {
	c.RestartPolicy, c.RestartPolicyRules = ptr.To(v1.ContainerRestartPolicyNever), restartAllOn42
	return c
}

type reset struct {
	name         string
	kill, source bool
}

func resets(a podsync.Actions) []reset {
	var out []reset
	for _, r := range a.ContainersToReset {
		out = append(out, reset{r.Name, r.Kill, r.Source})
	}
	return out
}

// The plan is upstream's getContainersToReset order: the app containers
// that did not cause the reset, then such init containers, then the
// sources; every instance of each, killed first when it has not exited.
func TestComputeResetActions(t *testing.T) {
	init, side, app := ctr("init"), sidecar("side"), ctr("app")
	src := restartsAll(ctr("src"))
	srcInit := restartsAll(ctr("src-init"))
	dead := []*runtimeapi.PodSandboxStatus{sbx("sb1", 0, false, "", false)}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *cri.PodStatus
		want   []reset
		create bool
	}{
		{"an app container exited 42",
			newPod(v1.RestartPolicyNever, []v1.Container{init, side}, src, app),
			status(ready(), cst("a1", app, running, 0, 0), cst("c1", src, exited, 42, 0), cst("s1", side, running, 0, 0), cst("i1", init, exited, 0, 0)),
			[]reset{{"app", true, false}, {"init", false, false}, {"side", true, false}, {"src", false, true}}, false},
		{"an init container exited 42: the sidecar before it goes first",
			newPod(v1.RestartPolicyNever, []v1.Container{side, srcInit}, app),
			status(ready(), cst("i1", srcInit, exited, 42, 0), cst("s1", side, running, 0, 0)),
			[]reset{{"side", true, false}, {"src-init", false, true}}, false},
		{"every instance of a container, the older ones too",
			newPod(v1.RestartPolicyNever, nil, src, app),
			status(ready(), cst("c2", src, exited, 42, 1), cst("a1", app, created, 0, 0), cst("c1", src, exited, 1, 0)),
			[]reset{{"src", false, false}, {"app", true, false}, {"src", false, true}}, false},
		{"two sources", newPod(v1.RestartPolicyNever, nil, src, restartsAll(ctr("src2"))),
			status(ready(), cst("c1", src, exited, 42, 0), cst("c2", restartsAll(ctr("src2")), exited, 42, 0)),
			[]reset{{"src", false, true}, {"src2", false, true}}, false},
		{"the sandbox died: kill the pod, a new sandbox, no reset yet",
			newPod(v1.RestartPolicyNever, nil, src, app),
			status(dead, cst("c1", src, exited, 42, 0), cst("a1", app, exited, 137, 0)), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := podsync.ComputeResetActions(tc.pod, tc.status)
			assert.Equal(t, tc.want, resets(a))
			assert.Equal(t, tc.create, a.CreateSandbox)
			assert.Equal(t, tc.create, a.KillPod)
			assert.Empty(t, a.ContainersToStart)
			assert.Empty(t, a.InitContainersToStart)
			assert.Empty(t, a.ContainersToKill)
			assert.False(t, a.Nothing())
		})
	}
}

// ComputeActions, for a pod not marked for a reset, restarts the source
// alone: a RestartAllContainers rule restarts (RestartsAfterExit), as in
// upstream's computePodActions without restartAllContainers.
func TestComputeActionsRestartAllContainersSource(t *testing.T) {
	src, app := restartsAll(ctr("src")), ctr("app")
	pod := newPod(v1.RestartPolicyNever, nil, src, app)
	a := podsync.ComputeActions(pod, status(ready(), cst("c1", src, exited, 42, 0), cst("a1", app, running, 0, 0)), podsync.Probes{})
	assert.Equal(t, want{nextInit: -1, apps: []int{0}}, summarize(a))
	a = podsync.ComputeActions(pod, status(ready(), cst("c1", src, exited, 1, 0), cst("a1", app, running, 0, 0)), podsync.Probes{})
	assert.Equal(t, want{nextInit: -1}, summarize(a), "exit 1 matches no rule: src stays down under its Never")
}

// ResetPod kills what runs without grace ("killing"), removes every
// instance, keeps the sandbox and the log files, and starts nothing; the
// next SyncPod starts the pod over from its first init container, each
// container's restart count going on from its log files.
func TestResetPod(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	src := restartsAll(ctr("src"))
	pod := newPod(v1.RestartPolicyNever, []v1.Container{ctr("init")}, src, ctr("app"))
	h.rt.SetRules([]fake.Rule{{Command: []string{"sleep", "3600"}, Name: "init", Behavior: fake.Behavior{Outcome: fake.Exit}}})
	require.NoError(t, h.sync(pod).Err()) // sandbox, init
	require.NoError(t, h.sync(pod).Err()) // src, app
	st := h.status(pod)
	srcID, appID, initID := st.ContainerByName("src").GetId(), st.ContainerByName("app").GetId(), st.ContainerByName("init").GetId()
	require.NoError(t, h.rt.ExitContainer(srcID, 42, "Error"))
	h.rec.TakeReasons()

	r := h.s.Sync(ctx, pod, h.status(pod), true)
	require.NoError(t, r.Err())
	assert.True(t, r.SyncAgain(), "the pod starts over at once")
	var removed []string
	for _, s := range r.Steps {
		assert.Equal(t, podsync.StepRemoveContainer, s.Step)
		removed = append(removed, s.Target+"/"+s.ContainerID)
	}
	assert.Equal(t, []string{"app/" + appID, "init/" + initID, "src/" + srcID}, removed)
	assert.Equal(t, []string{"Killing"}, h.rec.TakeReasons(), "only app ran")
	stops := h.rt.CallsOf(fake.StopContainer)
	if assert.Len(t, stops, 1) {
		req := stops[0].Request.(*runtimeapi.StopContainerRequest)
		assert.Equal(t, appID, req.GetContainerId())
		assert.Equal(t, podsync.MinimumGracePeriod, req.GetTimeout(), "no grace")
	}
	st = h.status(pod)
	assert.Empty(t, st.Containers)
	require.Len(t, st.Sandboxes, 1)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, st.Sandboxes[0].GetState(), "the sandbox stays")

	// The pod starts over in the same sandbox.
	r = h.s.Sync(ctx, pod, h.status(pod), true)
	require.NoError(t, r.Err())
	assert.False(t, r.SyncAgain(), "a reset with nothing left to remove: no sync at once")
	r = h.sync(pod)
	require.NoError(t, r.Err())
	assert.False(t, r.SyncAgain(), "a sync is not a reset")
	assert.False(t, r.Actions.CreateSandbox)
	assert.Equal(t, []int{0}, r.Actions.InitContainersToStart)
	require.NoError(t, h.sync(pod).Err())
	st = h.status(pod)
	for _, n := range []string{"init", "src", "app"} {
		assert.Equal(t, "1", st.ContainerByName(n).GetAnnotations()[cri.ContainerRestartCountAnnotation], n)
	}
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.ContainerByName("src").GetState())
}
