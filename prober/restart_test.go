package prober_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/prober"
)

// Across an agent restart, as upstream v1.35+ across a kubelet restart
// (ChangeContainerStatusOnKubeletRestart off): a container running since
// more than 10s before the manager was made keeps Started when its status
// says so, without its startup probe running again, and stays ready while
// its pod is Ready until its readiness probe publishes a result. A
// container started since is probed from scratch.
func TestAgentRestartKeepsStartedAndReady(t *testing.T) {
	yes := true
	failing := probe(0, 10, 1, 3)
	tests := []struct {
		name        string
		startedAt   time.Time
		podReady    bool
		startup     bool
		wasStarted  *bool
		runs        int // worker turns at once after AddPod
		wantStarted bool
		wantReady   bool
		wantCalls   []prober.ProbeType
	}{
		{name: "adopted, pod Ready: ready while its failing probe is under the threshold",
			startedAt: t0.Add(-time.Minute), podReady: true, runs: 1,
			wantStarted: true, wantReady: true, wantCalls: []prober.ProbeType{prober.Readiness}},
		{name: "adopted, pod not Ready",
			startedAt: t0.Add(-time.Minute), runs: 1,
			wantStarted: true, wantCalls: []prober.ProbeType{prober.Readiness}},
		{name: "started since the manager was made: initial Failure",
			startedAt: t0.Add(-5 * time.Second), podReady: true, runs: 1,
			wantStarted: true, wantCalls: []prober.ProbeType{prober.Readiness}},
		{name: "adopted and started: the startup probe does not run again",
			startedAt: t0.Add(-time.Minute), podReady: true, startup: true, wasStarted: &yes, runs: 2,
			wantStarted: true, wantReady: true, wantCalls: []prober.ProbeType{prober.Readiness}},
		{name: "adopted, never said started: the startup probe runs",
			startedAt: t0.Add(-time.Minute), podReady: true, startup: true, runs: 2,
			wantCalls: []prober.ProbeType{prober.Startup}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.run.Set("app", prober.Readiness, prober.Outcome{Result: prober.Failure, Output: "not yet"}, nil)
			h.run.Set("app", prober.Startup, prober.Outcome{Result: prober.Failure, Output: "not yet"}, nil)
			c := v1.Container{Name: "app", ReadinessProbe: failing}
			if tt.startup {
				c.StartupProbe = failing
			}
			pod := podWith(c)
			if tt.podReady {
				pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
			}
			st := running("c1", tt.startedAt)
			st.ContainerStatuses[0].Started = tt.wasStarted
			h.st.Set(pod.UID, st)
			h.m.AddPod(pod)
			for range tt.runs {
				h.next(t)
			}
			var types []prober.ProbeType
			for _, c := range h.run.Calls() {
				types = append(types, c.Type)
			}
			assert.Equal(t, tt.wantCalls, types, "probes run")

			generated := running("c1", tt.startedAt)
			generated.ContainerStatuses[0].Started = tt.wasStarted
			h.m.UpdatePodStatus(pod, &generated)
			cs := generated.ContainerStatuses[0]
			require.NotNil(t, cs.Started)
			assert.Equal(t, tt.wantStarted, *cs.Started, "started")
			assert.Equal(t, tt.wantReady, cs.Ready, "ready")
		})
	}
}

// An adopted container that was ready turns unready once its readiness
// probe publishes Failure (failureThreshold consecutive failures).
func TestAdoptedReadyContainerTurnsUnreadyOnItsProbe(t *testing.T) {
	h := newHarness(t, nil)
	h.run.Set("app", prober.Readiness, prober.Outcome{Result: prober.Failure, Output: "down"}, nil)
	pod := podWith(v1.Container{Name: "app", ReadinessProbe: probe(0, 10, 1, 2)})
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	h.st.Set(pod.UID, running("c1", t0.Add(-time.Minute)))
	h.m.AddPod(pod)
	h.next(t)
	st := running("c1", t0.Add(-time.Minute))
	h.m.UpdatePodStatus(pod, &st)
	require.True(t, st.ContainerStatuses[0].Ready, "one failure of two")
	// That status triggered the probe again: the second failure publishes.
	h.next(t)
	r, ok := h.m.Readiness().Get("c1")
	require.True(t, ok)
	assert.Equal(t, prober.Failure, r)
	st = running("c1", t0.Add(-time.Minute))
	h.m.UpdatePodStatus(pod, &st)
	assert.False(t, st.ContainerStatuses[0].Ready)
}

// A sidecar that had started before the restart gets a startup Success at
// once, so that the init containers after it are not held back (upstream
// kubernetes#136910).
func TestAdoptedStartedSidecarIsSeededStarted(t *testing.T) {
	h := newHarness(t, nil)
	always := v1.ContainerRestartPolicyAlways
	pod := podWith(v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: &always, StartupProbe: probe(0, 10, 1, 1)}}
	yes := true
	st := running("c1", t0.Add(-time.Minute))
	st.InitContainerStatuses = []v1.ContainerStatus{{Name: "sidecar", ContainerID: "containerd://s1", Started: &yes,
		State: st.ContainerStatuses[0].State}}
	h.st.Set(pod.UID, st)
	h.m.AddPod(pod)
	h.next(t)
	r, ok := h.m.Startup().Get("s1")
	require.True(t, ok)
	assert.Equal(t, prober.Success, r)
	assert.Empty(t, h.run.Calls(), "not probed again")
}

// A terminating pod's liveness and startup workers of its regular
// containers stop and their results go; its readiness workers and every
// sidecar's probes go on until RemovePod, as upstream's.
func TestStopLivenessAndStartup(t *testing.T) {
	h := newHarness(t, func(p time.Duration) time.Duration { return p }) // first runs a period away
	always := v1.ContainerRestartPolicyAlways
	pod := podWith(v1.Container{Name: "app", LivenessProbe: probe(0, 10, 1, 1), ReadinessProbe: probe(0, 10, 1, 1), StartupProbe: probe(0, 10, 1, 1)})
	pod.Spec.InitContainers = []v1.Container{{Name: "sidecar", RestartPolicy: &always, LivenessProbe: probe(0, 10, 1, 1)}}
	st := running("c1", t0)
	st.InitContainerStatuses = []v1.ContainerStatus{{Name: "sidecar", ContainerID: "containerd://s1", State: st.ContainerStatuses[0].State}}
	h.st.Set(pod.UID, st)
	h.m.AddPod(pod)
	stepWhenParked(t, h.clk, 10*time.Second)
	for range 4 { // app's startup, liveness and readiness (those two wait for startup) and the sidecar's liveness
		h.next(t)
	}
	_, ok := h.m.Startup().Get("c1")
	require.True(t, ok)
	// The status now says app started, as the agent's would.
	yes := true
	st.ContainerStatuses[0].Started = &yes
	h.st.Set(pod.UID, st)

	h.m.StopLivenessAndStartup(pod)
	_, ok = h.m.Startup().Get("c1")
	assert.False(t, ok, "the startup result is forgotten")
	_, ok = h.m.Liveness().Get("s1")
	assert.True(t, ok, "the sidecar's liveness goes on")
	before := len(h.run.Calls())
	stepWhenParked(t, h.clk, 10*time.Second)
	h.next(t)
	h.next(t)
	var types []prober.ProbeType
	for _, c := range h.run.Calls()[before:] {
		types = append(types, c.Type)
	}
	assert.ElementsMatch(t, []prober.ProbeType{prober.Readiness, prober.Liveness}, types, "app's readiness and the sidecar's liveness")
}
