package status

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/podspec"
)

type condWant struct {
	status  v1.ConditionStatus
	reason  string
	message string
}

func checkCond(t *testing.T, s v1.PodStatus, ct v1.PodConditionType, w condWant) {
	t.Helper()
	c := cond(s, ct)
	require.NotNil(t, c, "condition %s", ct)
	assert.Equal(t, w.status, c.Status, "%s status", ct)
	assert.Equal(t, w.reason, c.Reason, "%s reason", ct)
	if w.message != "" {
		assert.Equal(t, w.message, c.Message, "%s message", ct)
	}
}

func waitingReason(t *testing.T, s v1.PodStatus, name string) string {
	t.Helper()
	c := status(s, name)
	require.NotNil(t, c, name)
	require.NotNil(t, c.State.Waiting, "%s is %+v, not waiting", name, c.State)
	return c.State.Waiting.Reason
}

func TestGeneratePhase(t *testing.T) {
	var (
		never     = v1.RestartPolicyNever
		onFailure = v1.RestartPolicyOnFailure
		always    = v1.RestartPolicyAlways
	)
	tests := []struct {
		name     string
		pod      *v1.Pod
		rt       *cri.PodStatus
		terminal bool
		waiting  map[string]v1.ContainerStateWaiting
		want     v1.PodPhase
		check    func(t *testing.T, s v1.PodStatus)
	}{
		{
			name: "nothing created yet", pod: mkPod(always, nil, ctr("app")), rt: nil, want: v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.Equal(t, ReasonContainerCreating, waitingReason(t, s, "app"))
				checkCond(t, s, v1.PodReadyToStartContainers, condWant{status: v1.ConditionFalse})
				checkCond(t, s, v1.PodInitialized, condWant{status: v1.ConditionTrue})
				checkCond(t, s, v1.ContainersReady, condWant{v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [app]"})
				checkCond(t, s, v1.PodReady, condWant{v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [app]"})
				checkCond(t, s, v1.PodScheduled, condWant{status: v1.ConditionTrue})
			},
		},
		{
			name: "all running", pod: mkPod(always, nil, ctr("app"), ctr("log")),
			rt: rt(running("log", "c2", 2, 0), running("app", "c1", 1, 0)), want: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.PodReadyToStartContainers, condWant{status: v1.ConditionTrue})
				checkCond(t, s, v1.ContainersReady, condWant{status: v1.ConditionTrue})
				checkCond(t, s, v1.PodReady, condWant{status: v1.ConditionTrue})
				app := status(s, "app")
				assert.True(t, app.Ready)
				assert.True(t, *app.Started)
				assert.Equal(t, "containerd://c1", app.ContainerID)
				assert.Equal(t, "app:v1", app.Image)
				assert.Equal(t, "sha256:app", app.ImageID)
				assertTime(t, at(2), app.State.Running.StartedAt)
			},
		},
		{
			name: "one running one not created", pod: mkPod(always, nil, ctr("app"), ctr("log")),
			rt: rt(running("app", "c1", 1, 0)), want: v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.ContainersReady, condWant{v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [log]"})
			},
		},
		{
			name: "created but not started is waiting with no reason", pod: mkPod(always, nil, ctr("app")),
			rt: rt(cs("app", "c1", 1, 0, runtimeapi.ContainerState_CONTAINER_CREATED)), want: v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) { assert.Equal(t, "", waitingReason(t, s, "app")) },
		},
		{
			name: "never: all succeeded", pod: mkPod(never, nil, ctr("a"), ctr("b")),
			rt: rt(exited("b", "c2", 2, 0, 0, "Completed"), exited("a", "c1", 1, 0, 0, "Completed")), want: v1.PodSucceeded,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.ContainersReady, condWant{v1.ConditionFalse, ReasonPodCompleted, ""})
				checkCond(t, s, v1.PodReady, condWant{v1.ConditionFalse, ReasonPodCompleted, ""})
				a := status(s, "a")
				assert.Equal(t, "Completed", a.State.Terminated.Reason)
				assert.Equal(t, "containerd://c1", a.State.Terminated.ContainerID)
				assertTime(t, at(3), a.State.Terminated.FinishedAt)
				assert.False(t, a.Ready)
			},
		},
		{
			name: "never: one failed", pod: mkPod(never, nil, ctr("a"), ctr("b")),
			rt: rt(exited("b", "c2", 2, 0, 1, "Error"), exited("a", "c1", 1, 0, 0, "Completed")), want: v1.PodFailed,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.ContainersReady, condWant{v1.ConditionFalse, ReasonPodFailed, ""})
				checkCond(t, s, v1.PodReady, condWant{v1.ConditionFalse, ReasonPodFailed, ""})
				assert.Equal(t, int32(1), status(s, "b").State.Terminated.ExitCode)
			},
		},
		{
			name: "never: one failed, one still running", pod: mkPod(never, nil, ctr("a"), ctr("b")),
			rt: rt(exited("b", "c2", 2, 0, 1, "Error"), running("a", "c1", 1, 0)), want: v1.PodRunning,
		},
		{
			name: "onFailure: failed container restarts", pod: mkPod(onFailure, nil, ctr("a")),
			rt: rt(exited("a", "c1", 1, 0, 1, "Error")), want: v1.PodRunning,
		},
		{
			name: "onFailure: all succeeded", pod: mkPod(onFailure, nil, ctr("a")),
			rt: rt(exited("a", "c1", 1, 0, 0, "Completed")), want: v1.PodSucceeded,
		},
		{
			name: "onFailure: OOMKilled in crash loop", pod: mkPod(onFailure, nil, ctr("a")),
			rt:      rt(exited("a", "c2", 5, 1, 137, "OOMKilled"), exited("a", "c1", 1, 0, 137, "OOMKilled")),
			waiting: map[string]v1.ContainerStateWaiting{"a": {Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=a"}},
			want:    v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				a := status(s, "a")
				assert.Equal(t, "CrashLoopBackOff", a.State.Waiting.Reason)
				assert.Equal(t, "back-off 10s restarting failed container=a", a.State.Waiting.Message)
				assert.Equal(t, "OOMKilled", a.LastTerminationState.Terminated.Reason)
				assert.Equal(t, "containerd://c2", a.LastTerminationState.Terminated.ContainerID)
				assert.Equal(t, int32(1), a.RestartCount)
			},
		},
		{
			name: "always: all stopped is still running", pod: mkPod(always, nil, ctr("a")),
			rt: rt(exited("a", "c1", 1, 0, 0, "Completed")), want: v1.PodRunning,
		},
		{
			name: "always: terminal pod all succeeded", pod: mkPod(always, nil, ctr("a"), ctr("b")), terminal: true,
			rt: rt(exited("b", "c2", 2, 0, 0, "Completed"), exited("a", "c1", 1, 0, 0, "Completed")), want: v1.PodSucceeded,
		},
		{
			name: "always: terminal pod killed", pod: mkPod(always, nil, ctr("a")), terminal: true,
			rt: rt(exited("a", "c1", 1, 0, 137, "Error")), want: v1.PodFailed,
		},
		{
			name: "always: terminal static pod keeps restart policy", terminal: true,
			pod: func() *v1.Pod {
				p := mkPod(always, nil, ctr("a"))
				p.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "file"}
				return p
			}(),
			rt: rt(exited("a", "c1", 1, 0, 137, "Error")), want: v1.PodRunning,
		},
		{
			name: "terminal pod with a running container", pod: mkPod(always, nil, ctr("a")), terminal: true,
			rt: rt(running("a", "c1", 1, 0)), want: v1.PodRunning,
		},
		{
			name: "running init container", pod: mkPod(always, []v1.Container{ctr("init")}, ctr("app")),
			rt: rt(running("init", "i1", 1, 0)), want: v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.Equal(t, ReasonPodInitializing, waitingReason(t, s, "app"))
				checkCond(t, s, v1.PodInitialized, condWant{v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [init]"})
				assert.False(t, status(s, "init").Ready)
			},
		},
		{
			name: "init not yet created", pod: mkPod(always, []v1.Container{ctr("i1"), ctr("i2")}, ctr("app")),
			rt: rt(exited("i1", "x1", 1, 0, 0, "Completed")), want: v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.True(t, status(s, "i1").Ready)
				assert.Equal(t, ReasonPodInitializing, waitingReason(t, s, "i2"))
				checkCond(t, s, v1.PodInitialized, condWant{v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [i2]"})
			},
		},
		{
			name: "init done, app running", pod: mkPod(always, []v1.Container{ctr("init")}, ctr("app")),
			rt: rt(running("app", "c1", 2, 0), exited("init", "i1", 1, 0, 0, "Completed")), want: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.PodInitialized, condWant{status: v1.ConditionTrue})
				checkCond(t, s, v1.PodReady, condWant{status: v1.ConditionTrue})
			},
		},
		{
			name: "never: init failed", pod: mkPod(never, []v1.Container{ctr("init")}, ctr("app")),
			rt: rt(exited("init", "i1", 1, 0, 2, "Error")), want: v1.PodFailed,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.Equal(t, ReasonPodInitializing, waitingReason(t, s, "app"))
				checkCond(t, s, v1.PodInitialized, condWant{v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [init]"})
			},
		},
		{
			name: "onFailure: init failed and backing off", pod: mkPod(onFailure, []v1.Container{ctr("init")}, ctr("app")),
			rt:      rt(exited("init", "i1", 1, 0, 2, "Error")),
			waiting: map[string]v1.ContainerStateWaiting{"init": {Reason: "CrashLoopBackOff"}},
			want:    v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.Equal(t, "CrashLoopBackOff", waitingReason(t, s, "init"))
				assert.Equal(t, int32(2), status(s, "init").LastTerminationState.Terminated.ExitCode)
			},
		},
		{
			name: "init succeeded is never restarted even with a reason", pod: mkPod(always, []v1.Container{ctr("init")}, ctr("app")),
			rt:      rt(exited("init", "i1", 1, 0, 0, "Completed")),
			waiting: map[string]v1.ContainerStateWaiting{"init": {Reason: "CrashLoopBackOff"}, "app": {Reason: "ErrImagePull", Message: "pull failed"}},
			want:    v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.NotNil(t, status(s, "init").State.Terminated)
				assert.Equal(t, "ErrImagePull", waitingReason(t, s, "app"))
				assert.Equal(t, "pull failed", status(s, "app").State.Waiting.Message)
			},
		},
		{
			name: "sidecar running but not started", pod: mkPod(always, []v1.Container{withProbe(sidecar("proxy"), false, true)}, ctr("app")),
			rt: rt(running("proxy", "s1", 1, 0)), want: v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.False(t, *status(s, "proxy").Started)
				checkCond(t, s, v1.PodInitialized, condWant{v1.ConditionFalse, ReasonContainersNotInitialized, "containers with incomplete status: [proxy]"})
			},
		},
		{
			name: "sidecar started, app creating", pod: mkPod(always, []v1.Container{sidecar("proxy")}, ctr("app")),
			rt: rt(running("proxy", "s1", 1, 0)), want: v1.PodPending,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.PodInitialized, condWant{status: v1.ConditionTrue})
				assert.True(t, status(s, "proxy").Ready)
			},
		},
		{
			name: "sidecar and app running", pod: mkPod(always, []v1.Container{sidecar("proxy")}, ctr("app")),
			rt: rt(running("app", "c1", 2, 0), running("proxy", "s1", 1, 0)), want: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.ContainersReady, condWant{status: v1.ConditionTrue})
			},
		},
		{
			name: "sidecar not ready keeps the pod unready", pod: mkPod(always, []v1.Container{withProbe(sidecar("proxy"), true, false)}, ctr("app")),
			rt: rt(running("app", "c1", 2, 0), running("proxy", "s1", 1, 0)), want: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.ContainersReady, condWant{v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [proxy]"})
			},
		},
		{
			name: "sidecar restarting after app started: still initialized", pod: mkPod(always, []v1.Container{withProbe(sidecar("proxy"), false, true)}, ctr("app")),
			rt: rt(running("proxy", "s2", 5, 1), running("app", "c1", 2, 0), exited("proxy", "s1", 1, 0, 1, "Error")), want: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.PodInitialized, condWant{status: v1.ConditionTrue})
				assert.Equal(t, "Error", status(s, "proxy").LastTerminationState.Terminated.Reason)
			},
		},
		{
			name: "never: sidecar exited while app runs", pod: mkPod(never, []v1.Container{sidecar("proxy")}, ctr("app")),
			rt: rt(running("app", "c1", 2, 0), exited("proxy", "s1", 1, 0, 1, "Error")), want: v1.PodRunning,
		},
		{
			name: "never: app done, sidecar still running", pod: mkPod(never, []v1.Container{sidecar("proxy")}, ctr("app")),
			rt: rt(exited("app", "c1", 2, 0, 0, "Completed"), running("proxy", "s1", 1, 0)), want: v1.PodRunning,
		},
		{
			name: "never: app done, sidecar stopped", pod: mkPod(never, []v1.Container{sidecar("proxy")}, ctr("app")), terminal: true,
			rt: rt(exited("proxy", "s1", 3, 0, 143, "Error"), exited("app", "c1", 2, 0, 0, "Completed")), want: v1.PodSucceeded,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.PodInitialized, condWant{v1.ConditionTrue, ReasonPodCompleted, ""})
			},
		},
		{
			name: "never: init succeeded, app running", pod: mkPod(never, []v1.Container{ctr("init")}, ctr("app")),
			rt: rt(running("app", "c1", 2, 0), exited("init", "i1", 1, 0, 0, "Completed")), want: v1.PodRunning,
		},
		{
			name: "onFailure: app succeeded, sidecar still running", pod: mkPod(onFailure, []v1.Container{sidecar("proxy")}, ctr("app")),
			rt: rt(exited("app", "c1", 2, 0, 0, "Completed"), running("proxy", "s1", 1, 0)), want: v1.PodRunning,
		},
		{
			name: "onFailure: terminal, app failed, sidecar stopped", pod: mkPod(onFailure, []v1.Container{sidecar("proxy")}, ctr("app")), terminal: true,
			rt: rt(exited("proxy", "s1", 3, 0, 0, "Completed"), exited("app", "c1", 2, 0, 1, "Error")), want: v1.PodFailed,
		},
		{
			name: "onFailure: init succeeded, sidecar and app running", pod: mkPod(onFailure, []v1.Container{ctr("init"), sidecar("proxy")}, ctr("app")),
			rt: rt(running("app", "c1", 3, 0), running("proxy", "s1", 2, 0), exited("init", "i1", 1, 0, 0, "Completed")), want: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				assert.Equal(t, []string{"init", "proxy"}, []string{s.InitContainerStatuses[0].Name, s.InitContainerStatuses[1].Name}, "init statuses in spec order")
				checkCond(t, s, v1.PodInitialized, condWant{status: v1.ConditionTrue})
				checkCond(t, s, v1.PodReady, condWant{status: v1.ConditionTrue})
			},
		},
		{
			name: "sidecar waiting to restart before any app container: pending", pod: mkPod(always, []v1.Container{sidecar("proxy")}, ctr("app")),
			rt:      rt(exited("proxy", "s1", 1, 0, 1, "Error")),
			waiting: map[string]v1.ContainerStateWaiting{"proxy": {Reason: "CrashLoopBackOff"}},
			want:    v1.PodPending,
		},
		{
			name: "host network pod", want: v1.PodRunning,
			pod: func() *v1.Pod {
				p := mkPod(always, nil, ctr("a"))
				p.Spec.HostNetwork = true
				return p
			}(),
			rt: func() *cri.PodStatus {
				r := rt(running("a", "c1", 1, 0))
				r.IPs = nil
				r.Sandboxes[0].Network = nil
				r.Sandboxes[0].Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
				return r
			}(),
			check: func(t *testing.T, s v1.PodStatus) {
				assert.Equal(t, "192.168.1.10", s.PodIP)
				assert.Equal(t, []v1.PodIP{{IP: "192.168.1.10"}, {IP: "fd00::10"}}, s.PodIPs)
				checkCond(t, s, v1.PodReadyToStartContainers, condWant{status: v1.ConditionTrue})
			},
		},
		{
			name: "sandbox not ready: not ready to start containers", pod: mkPod(always, nil, ctr("a")),
			rt: func() *cri.PodStatus {
				r := rt(exited("a", "c1", 1, 0, 0, "Completed"))
				r.Sandboxes[0].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
				r.IPs = nil
				return r
			}(),
			want: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				checkCond(t, s, v1.PodReadyToStartContainers, condWant{status: v1.ConditionFalse})
				assert.Empty(t, s.PodIP)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pod: tc.pod, Runtime: tc.rt, PodIsTerminal: tc.terminal, RuntimeName: "containerd", Now: at(100),
				HostIPs: []string{"192.168.1.10", "fd00::10"}}
			if tc.waiting != nil {
				in.Waiting = waitingReasons(tc.waiting)
			}
			s, err := Generate(in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.Phase)
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestGenerateContainerHistory(t *testing.T) {
	pod := mkPod(v1.RestartPolicyAlways, nil, ctr("b"), ctr("a"))
	oldRunning := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
		{Name: "a", RestartCount: 4, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		{Name: "b", RestartCount: 1, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
	}}
	t.Run("statuses are sorted by name and keep the two newest instances", func(t *testing.T) {
		s, err := Generate(Input{Pod: pod, Runtime: rt(
			running("a", "a3", 30, 2), running("b", "b1", 5, 0), exited("a", "a2", 20, 1, 1, "Error"), exited("a", "a1", 10, 0, 1, "Error"),
		), Now: at(100)})
		require.NoError(t, err)
		require.Len(t, s.ContainerStatuses, 2)
		assert.Equal(t, "a", s.ContainerStatuses[0].Name)
		a := s.ContainerStatuses[0]
		assert.Equal(t, int32(2), a.RestartCount)
		assert.Equal(t, "cri://a3", a.ContainerID)
		assert.Equal(t, "cri://a2", a.LastTerminationState.Terminated.ContainerID)
	})
	t.Run("a running container the runtime lost is shown restarting", func(t *testing.T) {
		s, err := Generate(Input{Pod: pod, Runtime: rt(running("b", "b1", 5, 1)), Old: &oldRunning, Now: at(100)})
		require.NoError(t, err)
		a := status(s, "a")
		assert.Equal(t, ReasonContainerCreating, a.State.Waiting.Reason)
		assert.Equal(t, ReasonContainerStatusUnknown, a.LastTerminationState.Terminated.Reason)
		assert.Equal(t, int32(137), a.LastTerminationState.Terminated.ExitCode)
		assert.Equal(t, int32(5), a.RestartCount)
		assert.Equal(t, v1.PodRunning, s.Phase, "a lost container must not make the pod pending")
	})
	t.Run("lost while the pod is deleted: restart count stays", func(t *testing.T) {
		p := pod.DeepCopy()
		now := metav1.NewTime(at(50))
		p.DeletionTimestamp = &now
		s, err := Generate(Input{Pod: p, Runtime: rt(running("b", "b1", 5, 1)), Old: &oldRunning, Now: at(100)})
		require.NoError(t, err)
		assert.Equal(t, int32(4), status(s, "a").RestartCount)
	})
	t.Run("unknown state of a running container is a termination", func(t *testing.T) {
		s, err := Generate(Input{Pod: pod, Runtime: rt(
			cs("a", "a1", 10, 4, runtimeapi.ContainerState_CONTAINER_UNKNOWN), running("b", "b1", 5, 1),
		), Old: &oldRunning, Now: at(100)})
		require.NoError(t, err)
		a := status(s, "a")
		require.NotNil(t, a.State.Terminated)
		assert.Equal(t, ReasonContainerStatusUnknown, a.State.Terminated.Reason)
		assert.Equal(t, int32(5), a.RestartCount)
	})
	t.Run("unknown state of a container never seen running is waiting", func(t *testing.T) {
		s, err := Generate(Input{Pod: pod, Runtime: rt(cs("a", "a1", 10, 0, runtimeapi.ContainerState_CONTAINER_UNKNOWN)), Now: at(100)})
		require.NoError(t, err)
		assert.Equal(t, "", waitingReason(t, s, "a"))
	})
	t.Run("terminated old status is kept when the runtime forgot it", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyNever, nil, ctr("a"))
		old := v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}
		s, err := Generate(Input{Pod: p, Runtime: rt(), Old: &old, Now: at(100)})
		require.NoError(t, err)
		assert.Equal(t, "Completed", status(s, "a").State.Terminated.Reason)
		assert.Equal(t, v1.PodSucceeded, s.Phase)
	})
	t.Run("a container that can never run again is never reported running", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyNever, nil, ctr("a"))
		old := v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}}
		s, err := Generate(Input{Pod: p, Runtime: rt(running("a", "a2", 10, 1)), Old: &old, Now: at(100)})
		require.NoError(t, err)
		assert.Nil(t, status(s, "a").State.Running)
		assert.Equal(t, v1.PodSucceeded, s.Phase)
	})
	t.Run("the last termination outlives the collection of the instance before, as upstream 1.36", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
		a2 := &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", ContainerID: "cri://a2"}
		a1 := &v1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", ContainerID: "cri://a1"}
		for _, tc := range []struct {
			name     string
			old      v1.ContainerStatus
			runtime  []*runtimeapi.ContainerStatus
			wantLast string
			wantRC   int32
		}{
			{"a new instance after a terminated one: the old state",
				v1.ContainerStatus{Name: "a", ContainerID: "cri://a2", RestartCount: 2, State: v1.ContainerState{Terminated: a2}, LastTerminationState: v1.ContainerState{Terminated: a1}},
				[]*runtimeapi.ContainerStatus{exited("a", "a3", 30, 3, 1, "Error")}, "cri://a2", 3},
			{"the same instance: its old last termination",
				v1.ContainerStatus{Name: "a", ContainerID: "cri://a3", RestartCount: 3, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, LastTerminationState: v1.ContainerState{Terminated: a2}},
				[]*runtimeapi.ContainerStatus{exited("a", "a3", 30, 3, 1, "Error")}, "cri://a2", 3},
			{"the runtime's previous instance first",
				v1.ContainerStatus{Name: "a", ContainerID: "cri://a3", RestartCount: 3, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, LastTerminationState: v1.ContainerState{Terminated: a1}},
				[]*runtimeapi.ContainerStatus{exited("a", "a3", 30, 3, 1, "Error"), exited("a", "a2", 20, 2, 1, "Error")}, "cri://a2", 3},
			{"a restart count never goes back",
				v1.ContainerStatus{Name: "a", ContainerID: "cri://a3", RestartCount: 5, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
				[]*runtimeapi.ContainerStatus{running("a", "a3", 30, 3)}, "", 5},
		} {
			t.Run(tc.name, func(t *testing.T) {
				old := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{tc.old}}
				s, err := Generate(Input{Pod: p, Runtime: rt(tc.runtime...), Old: &old, Now: at(100)})
				require.NoError(t, err)
				a := status(s, "a")
				assert.Equal(t, tc.wantRC, a.RestartCount)
				if tc.wantLast == "" {
					assert.Nil(t, a.LastTerminationState.Terminated)
					return
				}
				require.NotNil(t, a.LastTerminationState.Terminated)
				assert.Equal(t, tc.wantLast, a.LastTerminationState.Terminated.ContainerID)
			})
		}
	})
	t.Run("onFailure: a failed container may run again", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyOnFailure, nil, ctr("a"))
		old := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}}}
		s, err := Generate(Input{Pod: p, Runtime: rt(running("a", "a2", 10, 1)), Old: &old, Now: at(100)})
		require.NoError(t, err)
		assert.NotNil(t, status(s, "a").State.Running)
	})
}

func TestGeneratePhaseStickiness(t *testing.T) {
	t.Run("the API's terminal phase is final", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
		p.Status.Phase = v1.PodFailed
		p.Status.Reason, p.Status.Message = "Evicted", "The node was low on resource: memory."
		s, err := Generate(Input{Pod: p, Runtime: rt(running("a", "a1", 1, 0)), Now: at(100)})
		require.NoError(t, err)
		assert.Equal(t, v1.PodFailed, s.Phase)
		assert.Equal(t, "Evicted", s.Reason)
		assert.Equal(t, "The node was low on resource: memory.", s.Message)
	})
	t.Run("the last generated terminal phase is kept", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
		old := v1.PodStatus{Phase: v1.PodSucceeded}
		s, err := Generate(Input{Pod: p, Runtime: rt(running("a", "a1", 1, 0)), Old: &old, Now: at(100)})
		require.NoError(t, err)
		assert.Equal(t, v1.PodSucceeded, s.Phase)
	})
	t.Run("reason and message go with a phase change", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
		old := v1.PodStatus{Phase: v1.PodPending, Reason: "SomeReason", Message: "m"}
		s, err := Generate(Input{Pod: p, Runtime: rt(running("a", "a1", 1, 0)), Old: &old, Now: at(100)})
		require.NoError(t, err)
		assert.Equal(t, v1.PodRunning, s.Phase)
		assert.Empty(t, s.Reason)
	})
}

func TestGenerateConditions(t *testing.T) {
	gated := func(gates ...v1.PodConditionType) *v1.Pod {
		p := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: g})
		}
		return p
	}
	running := rt(running("a", "a1", 1, 0))
	t.Run("readiness gates", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			conds []v1.PodCondition
			want  condWant
		}{
			{"missing", nil, condWant{v1.ConditionFalse, ReasonReadinessGatesNotReady, `corresponding condition of pod readiness gate "example.com/lb" does not exist.`}},
			{"false", []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionFalse}}, condWant{v1.ConditionFalse, ReasonReadinessGatesNotReady, `the status of pod readiness gate "example.com/lb" is not "True", but False`}},
			{"true", []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}, condWant{status: v1.ConditionTrue}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := gated("example.com/lb")
				p.Status.Conditions = tc.conds
				s, err := Generate(Input{Pod: p, Runtime: running, Now: at(100)})
				require.NoError(t, err)
				checkCond(t, s, v1.PodReady, tc.want)
				checkCond(t, s, v1.ContainersReady, condWant{status: v1.ConditionTrue})
			})
		}
	})
	t.Run("two gates: messages joined", func(t *testing.T) {
		p := gated("g1", "g2")
		p.Status.Conditions = []v1.PodCondition{{Type: "g2", Status: v1.ConditionUnknown}}
		s, err := Generate(Input{Pod: p, Runtime: running, Now: at(100)})
		require.NoError(t, err)
		checkCond(t, s, v1.PodReady, condWant{v1.ConditionFalse, ReasonReadinessGatesNotReady,
			`corresponding condition of pod readiness gate "g1" does not exist., the status of pod readiness gate "g2" is not "True", but Unknown`})
	})
	t.Run("conditions of others are kept, the node's own replaced", func(t *testing.T) {
		p := gated()
		p.Status.Conditions = []v1.PodCondition{
			{Type: "example.com/x", Status: v1.ConditionTrue, Reason: "Mine"},
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "Stale"},
		}
		old := v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}}
		s, err := Generate(Input{Pod: p, Runtime: running, Old: &old, Now: at(100)})
		require.NoError(t, err)
		var types []v1.PodConditionType
		for _, c := range s.Conditions {
			types = append(types, c.Type)
		}
		assert.Equal(t, []v1.PodConditionType{"example.com/x", v1.DisruptionTarget, v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled}, types)
		checkCond(t, s, v1.PodReady, condWant{status: v1.ConditionTrue})
		assert.Equal(t, int64(1), cond(s, v1.PodReady).ObservedGeneration)
	})
	t.Run("transition times move only on change", func(t *testing.T) {
		p := gated()
		first, err := Generate(Input{Pod: p, Runtime: running, Now: at(100)})
		require.NoError(t, err)
		assertTime(t, at(100), cond(first, v1.PodReady).LastTransitionTime)
		assertTime(t, at(100), *first.StartTime)

		same, err := Generate(Input{Pod: p, Runtime: running, Old: &first, Now: at(200)})
		require.NoError(t, err)
		for _, c := range same.Conditions {
			assertTime(t, at(100), c.LastTransitionTime)
		}
		assertTime(t, at(100), *same.StartTime)

		probes := ProbeResultsFunc(func(_ *v1.Pod, s *v1.PodStatus) {
			for i := range s.ContainerStatuses {
				s.ContainerStatuses[i].Ready = false
			}
		})
		changed, err := Generate(Input{Pod: p, Runtime: running, Old: &same, Now: at(300), Probes: probes})
		require.NoError(t, err)
		checkCond(t, changed, v1.PodReady, condWant{v1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [a]"})
		assertTime(t, at(300), cond(changed, v1.PodReady).LastTransitionTime)
		assertTime(t, at(300), cond(changed, v1.ContainersReady).LastTransitionTime)
		assertTime(t, at(100), cond(changed, v1.PodInitialized).LastTransitionTime)
	})
	t.Run("probe results come before conditions", func(t *testing.T) {
		var called bool
		probes := ProbeResultsFunc(func(pod *v1.Pod, s *v1.PodStatus) {
			called = true
			assert.Empty(t, s.Conditions, "conditions are computed after the probes")
			require.Len(t, s.ContainerStatuses, 1)
		})
		_, err := Generate(Input{Pod: gated(), Runtime: running, Now: at(100), Probes: probes})
		require.NoError(t, err)
		assert.True(t, called)
	})
}

func TestGenerateTerminationMessage(t *testing.T) {
	withMsg := func(policy v1.TerminationMessagePolicy, code int32, reason, runtimeMsg string) *cri.PodStatus {
		c := exited("a", "a1", 1, 0, code, reason)
		c.Message = runtimeMsg
		c.Annotations[cri.ContainerTerminationMessagePathAnnotation] = "/dev/termination-log"
		c.Annotations[cri.ContainerTerminationMessagePolicyAnnotation] = string(policy)
		c.Mounts = []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: "/pods/uid-1/containers/a/abc"}}
		c.LogPath = "/logs/ns_web_uid-1/a/0.log"
		return rt(c)
	}
	logs := "2026-01-02T03:04:05.000000000Z stdout F line one\n" +
		"2026-01-02T03:04:05.000000000Z stderr P part\n" +
		"2026-01-02T03:04:05.000000000Z stderr F ial\n"
	files := fakeMessages{
		files: map[string]string{"/pods/uid-1/containers/a/abc": "bye"},
		logs:  map[string]string{"/logs/ns_web_uid-1/a/0.log": logs},
	}
	empty := fakeMessages{files: map[string]string{"/pods/uid-1/containers/a/abc": ""}, logs: files.logs}
	tests := []struct {
		name   string
		rt     *cri.PodStatus
		reader MessageReader
		want   string
	}{
		{"file", withMsg(v1.TerminationMessageReadFile, 1, "Error", ""), files, "bye"},
		{"file appended to the runtime's message", withMsg(v1.TerminationMessageReadFile, 1, "Error", "exit status 1"), files, "exit status 1: bye"},
		{"file wins over logs", withMsg(v1.TerminationMessageFallbackToLogsOnError, 1, "Error", ""), files, "bye"},
		{"empty file falls back to logs on error", withMsg(v1.TerminationMessageFallbackToLogsOnError, 1, "Error", ""), empty, "line one\npartial\n"},
		{"no fallback on success", withMsg(v1.TerminationMessageFallbackToLogsOnError, 0, "Completed", ""), empty, ""},
		{"no fallback for a container that never ran", withMsg(v1.TerminationMessageFallbackToLogsOnError, 128, "ContainerCannotRun", "no such file"), empty, "no such file"},
		{"missing file with ReadFile", withMsg(v1.TerminationMessageReadFile, 1, "Error", ""), fakeMessages{}, ""},
		{"unreadable file", withMsg(v1.TerminationMessageReadFile, 1, "Error", ""), fakeMessages{err: errors.New("permission denied")}, "Error on reading termination log /pods/uid-1/containers/a/abc: permission denied"},
		{"no reader", withMsg(v1.TerminationMessageReadFile, 1, "Error", "runtime says"), nil, "runtime says"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Generate(Input{Pod: mkPod(v1.RestartPolicyNever, nil, ctr("a")), Runtime: tc.rt, Messages: tc.reader, Now: at(100)})
			require.NoError(t, err)
			assert.Equal(t, tc.want, status(s, "a").State.Terminated.Message)
		})
	}
}

func TestGenerateIPsAndQoS(t *testing.T) {
	t.Run("dual stack, node IPv6 first", func(t *testing.T) {
		r := rt(running("a", "a1", 1, 0))
		r.IPs = []string{"10.0.0.5", "10.0.0.6", "fd00::5"}
		s, err := Generate(Input{Pod: mkPod(v1.RestartPolicyAlways, nil, ctr("a")), Runtime: r, HostIPs: []string{"fd00::1", "192.168.1.1"}, Now: at(1)})
		require.NoError(t, err)
		assert.Equal(t, "fd00::5", s.PodIP)
		assert.Equal(t, []v1.PodIP{{IP: "fd00::5"}, {IP: "10.0.0.5"}}, s.PodIPs)
		assert.Equal(t, "fd00::1", s.HostIP)
		assert.Equal(t, []v1.HostIP{{IP: "fd00::1"}, {IP: "192.168.1.1"}}, s.HostIPs)
	})
	q := func(req, lim string) v1.Container {
		c := ctr("x")
		if req != "" {
			c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: resourceMust(req), v1.ResourceMemory: resourceMust(req + "Mi")}
		}
		if lim != "" {
			c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resourceMust(lim), v1.ResourceMemory: resourceMust(lim + "Mi")}
		}
		return c
	}
	for _, tc := range []struct {
		name string
		c    v1.Container
		want v1.PodQOSClass
	}{
		{"best effort", q("", ""), v1.PodQOSBestEffort},
		{"guaranteed", q("1", "1"), v1.PodQOSGuaranteed},
		{"burstable", q("1", "2"), v1.PodQOSBurstable},
		{"requests only", q("1", ""), v1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Generate(Input{Pod: mkPod(v1.RestartPolicyAlways, nil, tc.c), Now: at(1)})
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.QOSClass)
		})
	}
	t.Run("a finished pod keeps its last IPs once its sandbox is stopped", func(t *testing.T) {
		pod := mkPod(v1.RestartPolicyNever, nil, ctr("a"))
		running := rt(running("a", "a1", 1, 0))
		s, err := Generate(Input{Pod: pod, Runtime: running, Now: at(3)})
		require.NoError(t, err)
		require.Equal(t, "10.0.0.5", s.PodIP)
		done := rt(exited("a", "a1", 1, 0, 0, "Completed"))
		done.IPs = nil // the sandbox was stopped
		s, err = Generate(Input{Pod: pod, Runtime: done, Old: &s, Now: at(5)})
		require.NoError(t, err)
		assert.Equal(t, v1.PodSucceeded, s.Phase)
		assert.Equal(t, "10.0.0.5", s.PodIP)
		assert.Equal(t, []v1.PodIP{{IP: "10.0.0.5"}}, s.PodIPs)
		checkCond(t, s, v1.PodInitialized, condWant{v1.ConditionTrue, ReasonPodCompleted, ""})
	})
	t.Run("the prober sees the pod's IPs", func(t *testing.T) {
		// A readiness probe the prober triggers from the status being
		// generated connects to its pod IP: an empty one made the probe
		// dial ":port" ("connection refused") in upstream's cluster suite.
		pod := mkPod(v1.RestartPolicyAlways, nil, withProbe(ctr("a"), false, true))
		var seen []string
		probes := ProbeResultsFunc(func(_ *v1.Pod, s *v1.PodStatus) { seen = append(seen, s.PodIP) })
		s, err := Generate(Input{Pod: pod, Runtime: rt(running("a", "a1", 1, 0)), Probes: probes, Now: at(3)})
		require.NoError(t, err)
		done := rt(exited("a", "a1", 1, 0, 1, "Error"))
		done.IPs = nil // the sandbox was stopped: the last IPs are kept
		_, err = Generate(Input{Pod: pod, Runtime: done, Old: &s, Probes: probes, Now: at(5)})
		require.NoError(t, err)
		assert.Equal(t, []string{"10.0.0.5", "10.0.0.5"}, seen)
	})
	t.Run("status QoS is kept", func(t *testing.T) {
		p := mkPod(v1.RestartPolicyAlways, nil, q("", ""))
		p.Status.QOSClass = v1.PodQOSGuaranteed
		s, err := Generate(Input{Pod: p, Now: at(1)})
		require.NoError(t, err)
		assert.Equal(t, v1.PodQOSGuaranteed, s.QOSClass)
	})
}

func TestGenerateBadInput(t *testing.T) {
	_, err := Generate(Input{})
	assert.ErrorIs(t, err, ErrInvalidInput)
	other := rt()
	other.UID = "someone-else"
	_, err = Generate(Input{Pod: mkPod(v1.RestartPolicyAlways, nil, ctr("a")), Runtime: other})
	assert.ErrorIs(t, err, ErrInvalidInput)
	assert.ErrorContains(t, err, "someone-else")
}

func TestGenerateDoesNotModifyInput(t *testing.T) {
	p := mkPod(v1.RestartPolicyAlways, []v1.Container{ctr("init")}, ctr("a"))
	p.Status.Conditions = []v1.PodCondition{{Type: "x", Status: v1.ConditionTrue}}
	old := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}}
	pCopy, oldCopy := p.DeepCopy(), old.DeepCopy()
	s, err := Generate(Input{Pod: p, Runtime: rt(running("a", "a2", 5, 1)), Old: &old, Now: at(1)})
	require.NoError(t, err)
	s.ContainerStatuses[0].State.Running.StartedAt = metav1.Now()
	s.Conditions[0].Reason = "changed"
	assert.Equal(t, pCopy, p)
	assert.Equal(t, oldCopy, &old)
}

func TestGenerateRestartRulesForWaitingReasons(t *testing.T) {
	reasons := waitingReasons(map[string]v1.ContainerStateWaiting{"a": {Reason: "CrashLoopBackOff"}})
	for _, tc := range []struct {
		name    string
		policy  v1.RestartPolicy
		code    int32
		deleted bool
		waiting bool
	}{
		{"always restarts after success", v1.RestartPolicyAlways, 0, false, true},
		{"onFailure restarts after failure", v1.RestartPolicyOnFailure, 1, false, true},
		{"onFailure keeps a success", v1.RestartPolicyOnFailure, 0, false, false},
		{"never keeps a failure", v1.RestartPolicyNever, 1, false, false},
		{"a deleted pod never restarts", v1.RestartPolicyAlways, 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mkPod(tc.policy, nil, ctr("a"))
			if tc.deleted {
				now := metav1.NewTime(at(1))
				p.DeletionTimestamp = &now
			}
			s, err := Generate(Input{Pod: p, Runtime: rt(exited("a", "a1", 1, 0, tc.code, "x")), Waiting: reasons, Now: at(10)})
			require.NoError(t, err)
			a := status(s, "a")
			assert.Equal(t, tc.waiting, a.State.Waiting != nil)
			assert.Equal(t, !tc.waiting, a.State.Terminated != nil)
		})
	}
}

func TestConditionHelpers(t *testing.T) {
	p := mkPod(v1.RestartPolicyAlways, []v1.Container{sidecar("proxy")}, ctr("a"))
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "g"}}
	ready := []v1.ContainerStatus{{Name: "a", Ready: true}}
	c := ReadyCondition(p, nil, ready, v1.PodRunning, nil)
	assert.Equal(t, ReasonContainersNotReady, c.Reason)
	assert.Equal(t, "containers with unknown status: [proxy]", c.Message)
	c = ReadyCondition(p, []v1.ContainerStatus{{Name: "proxy", Ready: true}}, ready, v1.PodRunning, []v1.PodCondition{{Type: "g", Status: v1.ConditionTrue}})
	assert.Equal(t, v1.ConditionTrue, c.Status)
	c = ContainersReadyCondition(p, nil, nil, v1.PodPending)
	assert.Equal(t, ReasonUnknownContainerStatuses, c.Reason)
	c = InitializedCondition(p, nil, nil, v1.PodPending)
	assert.Equal(t, ReasonUnknownContainerStatuses, c.Reason)
}

func TestPodLevelQoS(t *testing.T) {
	p := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
	p.Spec.Resources = &v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resourceMust("1"), v1.ResourceMemory: resourceMust("1Gi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resourceMust("1"), v1.ResourceMemory: resourceMust("1Gi")},
	}
	assert.Equal(t, v1.PodQOSGuaranteed, podspec.ComputeQOSClass(p))
	p.Spec.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resourceMust("2")}
	assert.Equal(t, v1.PodQOSBurstable, podspec.ComputeQOSClass(p))
}

func TestNeedsReadinessReconcile(t *testing.T) {
	running := v1.ContainerStatus{Name: "app", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	notReady := `the status of pod readiness gate "example.com/lb" is not "True", but False`
	for _, tc := range []struct {
		name  string
		gates bool
		conds []v1.PodCondition
		want  bool
	}{
		{name: "no readiness gates", conds: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}},
		{name: "no Ready condition yet", gates: true, conds: []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}},
		{name: "the gate turned True: Ready must follow", gates: true, want: true, conds: []v1.PodCondition{
			{Type: "example.com/lb", Status: v1.ConditionTrue},
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonReadinessGatesNotReady, Message: notReady}}},
		{name: "the gate turned False: Ready must follow", gates: true, want: true, conds: []v1.PodCondition{
			{Type: "example.com/lb", Status: v1.ConditionFalse},
			{Type: v1.PodReady, Status: v1.ConditionTrue}}},
		{name: "in agreement", gates: true, conds: []v1.PodCondition{
			{Type: "example.com/lb", Status: v1.ConditionFalse},
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonReadinessGatesNotReady, Message: notReady}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
			if tc.gates {
				p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			}
			p.Status = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running}, Conditions: tc.conds}
			assert.Equal(t, tc.want, NeedsReadinessReconcile(p))
		})
	}
}

// The identity the runtime reports a container running with is shown in
// its status, as upstream does (containerd 2.0+ reports it); nothing when the
// runtime reports none.
func TestGenerateContainerUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		user *runtimeapi.ContainerUser
		want *v1.ContainerUser
	}{
		{name: "none reported"},
		{name: "linux", user: &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 3000, SupplementalGroups: []int64{3000, 4000}}},
			want: &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}},
		{name: "a user without its linux part", user: &runtimeapi.ContainerUser{}, want: &v1.ContainerUser{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := running("a", "a1", 1, 0)
			c.User = tc.user
			s, err := Generate(Input{Pod: mkPod(v1.RestartPolicyAlways, nil, ctr("a")), Runtime: rt(c), Now: at(1)})
			require.NoError(t, err)
			assert.Equal(t, tc.want, status(s, "a").User)
		})
	}
}

// The status a prober is handed keeps Started of the same running
// container from the last status (so that an agent restart does not turn a
// started container unstarted, as upstream's kubelet restart does not);
// another instance of the container starts without it.
func TestGenerateCarriesStartedOfTheSameContainer(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		oldID  string
		old    *bool
		now    *runtimeapi.ContainerStatus
		wantOK bool
		want   bool
	}{
		{name: "the same container, started", oldID: "containerd://c1", old: &yes, now: running("app", "c1", 10, 0), wantOK: true, want: true},
		{name: "the same container, not started", oldID: "containerd://c1", old: &no, now: running("app", "c1", 10, 0), wantOK: true},
		{name: "a new instance", oldID: "containerd://c0", old: &yes, now: running("app", "c1", 10, 1)},
		{name: "no Started in the last status", oldID: "containerd://c1", now: running("app", "c1", 10, 0)},
		{name: "the same container, exited", oldID: "containerd://c1", old: &yes, now: exited("app", "c1", 10, 0, 1, "Error")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := mkPod(v1.RestartPolicyAlways, nil, withProbe(ctr("app"), false, true))
			old := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "app", ContainerID: tt.oldID, Started: tt.old,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at(1))}}}}}
			var seen *bool
			probes := ProbeResultsFunc(func(_ *v1.Pod, s *v1.PodStatus) { seen = s.ContainerStatuses[0].Started })
			_, err := Generate(Input{Pod: pod, Runtime: rt(tt.now), Old: &old, RuntimeName: "containerd", Probes: probes, Now: at(20)})
			require.NoError(t, err)
			if !tt.wantOK {
				assert.Nil(t, seen)
				return
			}
			require.NotNil(t, seen)
			assert.Equal(t, tt.want, *seen)
			assert.NotSame(t, tt.old, seen, "the result shares no memory with the input")
		})
	}
}
