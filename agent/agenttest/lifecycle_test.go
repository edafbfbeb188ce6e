package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func execProbe(period, failures int32, cmd ...string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: cmd}},
		PeriodSeconds: period, FailureThreshold: failures}
}

func container(name string, cmd ...string) v1.Container {
	return v1.Container{Name: name, Image: "busybox:1.36", Command: cmd}
}

func ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// A readiness probe that starts failing takes the pod out of Ready after
// failureThreshold periods; a liveness probe that fails failureThreshold
// times in a row gets the container killed and restarted.
func TestProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		healthy := func(live, ready int32) {
			n.Runtime().SetExecRules([]fake.ExecRule{
				{Command: []string{"cat", "/tmp/live"}, ExitCode: live},
				{Command: []string{"cat", "/tmp/ready"}, ExitCode: ready},
			})
		}
		healthy(0, 0)
		c := container("app", "sleep", "3600")
		c.LivenessProbe = execProbe(10, 3, "cat", "/tmp/live")
		// Off the liveness probe's beat (10s) where it kills: two probes
		// of a container due at the same instant run concurrently, as in
		// any kubelet, and which sees the kill first is not reproducible.
		c.ReadinessProbe = execProbe(3, 2, "cat", "/tmp/ready")
		tr := newTranscript(n)
		n.AddPod(pod("probed", c))
		tr.run(20*time.Second, "probed")
		require.True(t, ready(n.Pod("default", "probed")))

		healthy(0, 1)
		tr.run(20*time.Second, "probed")
		assert.False(t, ready(n.Pod("default", "probed")), "readiness failed twice")
		assert.Zero(t, n.Pod("default", "probed").Status.ContainerStatuses[0].RestartCount)

		healthy(1, 0)
		tr.run(35*time.Second, "probed")
		healthy(0, 0)
		tr.run(20*time.Second, "probed")
		p := n.Pod("default", "probed")
		assert.Equal(t, int32(1), p.Status.ContainerStatuses[0].RestartCount, "liveness failed three times")
		assert.True(t, ready(p))
		golden(t, "probes.txt", tr.b.String())
	})
}

// Init containers run one at a time, in order, each to completion, before
// the app containers start; a sidecar (a restartable init container) starts
// before the init containers after it and keeps running beside the app.
func TestInitContainersAndSidecar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Name: "fetch", Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: 3 * time.Second}},
			{Name: "migrate", Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: 5 * time.Second}},
		}})
		always := v1.ContainerRestartPolicyAlways
		proxy := container("proxy", "sleep", "3600")
		proxy.RestartPolicy = &always
		p := pod("init", container("app", "sleep", "3600"))
		p.Spec.InitContainers = []v1.Container{container("fetch", "wget", "x"), proxy, container("migrate", "migrate")}
		tr := newTranscript(n)
		n.AddPod(p)
		tr.run(15*time.Second, "init")
		got := n.Pod("default", "init")
		require.Equal(t, v1.PodRunning, got.Status.Phase)
		require.Len(t, got.Status.InitContainerStatuses, 3)
		assert.NotNil(t, got.Status.InitContainerStatuses[0].State.Terminated, "fetch completed")
		assert.NotNil(t, got.Status.InitContainerStatuses[1].State.Running, "the sidecar runs")
		assert.NotNil(t, got.Status.InitContainerStatuses[2].State.Terminated, "migrate completed")
		assert.NotNil(t, got.Status.ContainerStatuses[0].State.Running, "app runs")
		golden(t, "init-sidecar.txt", tr.b.String())
	})
}

// Deleting a pod runs its preStop hook, then stops its containers within
// the grace period (a container that ignores SIGTERM is killed when it
// ends), and the pod leaves the API server once its final status is
// written.
func TestGracefulDeletionWithPreStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Name: "app", Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}},
		}})
		n.Runtime().SetExecRules([]fake.ExecRule{{Command: []string{"sh", "-c", "drain"}, Duration: 4 * time.Second}})
		c := container("app", "sleep", "3600")
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "drain"}}}}
		p := pod("graceful", c)
		grace := int64(10)
		p.Spec.TerminationGracePeriodSeconds = &grace
		tr := newTranscript(n)
		n.AddPod(p)
		tr.run(3*time.Second, "graceful")
		require.Equal(t, 1, running(n, "graceful"))

		n.DeletePod("default", "graceful")
		tr.observe("graceful")
		tr.run(9*time.Second, "graceful")
		assert.Equal(t, 1, running(n, "graceful"), "still within the grace period")
		tr.run(3*time.Second, "graceful")
		assert.Zero(t, running(n, "graceful"), "killed when the grace period ended")
		tr.run(5*time.Second, "graceful")
		assert.Nil(t, n.Pod("default", "graceful"), "gone from the API server")
		golden(t, "graceful-deletion.txt", tr.b.String())
	})
}

// A terminating pod's readiness probe goes on through its grace period, and
// its liveness probe stops, as upstream's: a container that stops serving
// on SIGTERM (and ignores the signal otherwise) turns the pod unready
// within a readiness period, not when it is killed at the grace period's
// end; its failing liveness probe does not restart it.
func TestTerminatingPodTurnsUnreadyOnItsProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Name: "app", Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}},
		}})
		serving := func(ok bool) {
			code := int32(1)
			if ok {
				code = 0
			}
			n.Runtime().SetExecRules([]fake.ExecRule{
				{Command: []string{"cat", "/tmp/ready"}, ExitCode: code},
				{Command: []string{"cat", "/tmp/live"}, ExitCode: code},
			})
		}
		serving(true)
		c := container("app", "sleep", "3600")
		c.ReadinessProbe = execProbe(2, 1, "cat", "/tmp/ready")
		c.LivenessProbe = execProbe(2, 1, "cat", "/tmp/live")
		p := pod("draining", c)
		grace := int64(30)
		p.Spec.TerminationGracePeriodSeconds = &grace
		n.AddPod(p)
		require.True(t, n.StepUntil(time.Minute, func() bool { return ready(n.Pod("default", "draining")) }))

		n.DeletePod("default", "draining")
		serving(false) // its SIGTERM handler stops serving
		deleted := n.Now()
		require.True(t, n.StepUntil(10*time.Second, func() bool { return !ready(n.Pod("default", "draining")) }),
			"unready within its readiness period")
		assert.Less(t, n.Now().Sub(deleted), 5*time.Second)
		assert.Equal(t, 1, running(n, "draining"), "still within the grace period")
		got := n.Pod("default", "draining")
		require.Len(t, got.Status.ContainerStatuses, 1)
		assert.False(t, got.Status.ContainerStatuses[0].Ready)
		assert.Zero(t, got.Status.ContainerStatuses[0].RestartCount, "no liveness restart while terminating")
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "draining") == nil }), "gone after the grace period")
	})
}

// A pod with a readiness gate is Ready only once another writer sets the
// gate's condition True through the API, and leaves Ready when it turns
// False; the node reports each change at once, not at its next resync.
func TestReadinessGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		p := pod("gated", container("app", "sleep", "3600"))
		p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
		n.AddPod(p)
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "gated").Status.Phase == v1.PodRunning }))
		n.Step(5 * time.Second)
		assert.False(t, ready(n.Pod("default", "gated")), "the gate's condition does not exist")

		gate := func(s v1.ConditionStatus) {
			n.SetPodCondition("default", "gated", v1.PodCondition{Type: "example.com/lb", Status: s})
			n.Step(2 * time.Second)
		}
		gate(v1.ConditionTrue)
		assert.True(t, ready(n.Pod("default", "gated")), "the gate is True")
		gate(v1.ConditionFalse)
		p = n.Pod("default", "gated")
		assert.False(t, ready(p), "the gate is False")
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady {
				assert.Equal(t, "ReadinessGatesNotReady", c.Reason)
			}
		}
	})
}

// A pod that asks for an AppArmor profile the node cannot apply is refused
// with upstream's reason and never runs; the node's other pods go on. Added
// at the node's start, before the workers first learn the desired pods, its
// Failed phase is written once they know it runs nothing.
func TestAppArmorProfileRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		p := pod("confined", container("app", "sleep", "3600"))
		// A Localhost profile without a name: refused on any host, with
		// AppArmor or without.
		p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost}}
		n.AddPod(p)
		n.AddPod(pod("plain", container("app", "sleep", "3600")))
		require.True(t, n.StepUntil(time.Minute, func() bool {
			return n.Pod("default", "plain").Status.Phase == v1.PodRunning && n.Pod("default", "confined").Status.Phase != ""
		}))
		got := n.Pod("default", "confined").Status
		assert.Equal(t, v1.PodFailed, got.Phase)
		assert.Equal(t, "AppArmor", got.Reason)
		assert.Contains(t, got.Message, "Pod was rejected: Cannot enforce AppArmor: ")
		assert.Empty(t, got.ContainerStatuses)
	})
}

// The security context reaches the runtime whole: a restricted pod's
// containers get RuntimeDefault seccomp, no_new_privs and no capabilities;
// its sandbox RuntimeDefault too. A pod that asks for what the runtime
// cannot do never runs weaker: supplementalGroupsPolicy Strict is refused at
// admission, hostUsers: false gets no sandbox (upstream's event, the
// container waiting in ContainerCreating), as upstream on a runtime without
// either feature.
func TestSecurityContextReachesRuntime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		restricted := pod("restricted", container("app", "sleep", "3600"))
		restricted.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
			SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}
		restricted.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}
		strict := pod("strict", container("app", "sleep", "3600"))
		policy := v1.SupplementalGroupsPolicyStrict
		strict.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &policy}
		userns := pod("userns", container("app", "sleep", "3600"))
		userns.Spec.HostUsers = ptr.To(false)
		n.Step(5 * time.Second)
		n.AddPod(restricted)
		n.AddPod(strict)
		n.AddPod(userns)
		require.True(t, n.StepUntil(time.Minute, func() bool {
			return n.Pod("default", "restricted").Status.Phase == v1.PodRunning && n.Pod("default", "strict").Status.Phase == v1.PodFailed
		}))
		var sandboxes []string
		for _, c := range n.Runtime().CallsOf(fake.RunPodSandbox) {
			cfg := c.Request.(*runtimeapi.RunPodSandboxRequest).GetConfig()
			sandboxes = append(sandboxes, cfg.GetMetadata().GetName())
			assert.Equal(t, runtimeapi.SecurityProfile_RuntimeDefault, cfg.GetLinux().GetSecurityContext().GetSeccomp().GetProfileType())
		}
		assert.Equal(t, []string{"restricted"}, sandboxes, "neither the Strict pod nor the user-namespaced one got a sandbox")
		created := n.Runtime().CallsOf(fake.CreateContainer)
		require.Len(t, created, 1)
		sc := created[0].Request.(*runtimeapi.CreateContainerRequest).GetConfig().GetLinux().GetSecurityContext()
		assert.Equal(t, runtimeapi.SecurityProfile_RuntimeDefault, sc.GetSeccomp().GetProfileType())
		assert.True(t, sc.GetNoNewPrivs())
		assert.Equal(t, []string{"ALL"}, sc.GetCapabilities().GetDropCapabilities())
		assert.Equal(t, int64(1000), sc.GetRunAsUser().GetValue())

		got := n.Pod("default", "strict").Status
		assert.Equal(t, "SupplementalGroupsPolicyNotSupported", got.Reason)
		assert.Equal(t, "Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node", got.Message)

		us := n.Pod("default", "userns").Status
		assert.Equal(t, v1.PodPending, us.Phase)
		require.Len(t, us.ContainerStatuses, 1)
		assert.Equal(t, "ContainerCreating", us.ContainerStatuses[0].State.Waiting.Reason)
		var failed []string
		for _, e := range n.Events() {
			if e.Object == "Pod default/userns" && e.Reason == "FailedCreatePodSandBox" {
				failed = append(failed, e.Message)
			}
		}
		require.NotEmpty(t, failed)
		assert.Equal(t, "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces", failed[0])
	})
}

// A pod setting only safe sysctls runs, and its sandbox gets them (a name
// with slashes in its dotted form); one setting an unsafe sysctl the node
// does not allow is refused with upstream's reason and message.
func TestSysctls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		safe := pod("safe", container("app", "sleep", "3600"))
		safe.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel/shm_rmid_forced", Value: "1"}}}
		unsafe := pod("unsafe", container("app", "sleep", "3600"))
		unsafe.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "10000"}}}
		n.Step(5 * time.Second)
		n.AddPod(safe)
		n.AddPod(unsafe)
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "safe").Status.Phase == v1.PodRunning }))
		var sysctls []map[string]string
		for _, c := range n.Runtime().CallsOf(fake.RunPodSandbox) {
			sysctls = append(sysctls, c.Request.(*runtimeapi.RunPodSandboxRequest).GetConfig().GetLinux().GetSysctls())
		}
		assert.Equal(t, []map[string]string{{"kernel.shm_rmid_forced": "1"}}, sysctls, "one sandbox, the safe pod's")
		got := n.Pod("default", "unsafe").Status
		assert.Equal(t, v1.PodFailed, got.Phase)
		assert.Equal(t, "SysctlForbidden", got.Reason)
		assert.Equal(t, `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`, got.Message)
	})
}

// A volume mount that asks for recursive read-only mode on a runtime that
// cannot do it does not run plain read-only: the container fails with
// CreateContainerConfigError and upstream's message.
func TestRecursiveReadOnlyUnsupported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		enabled := v1.RecursiveReadOnlyEnabled
		c := container("app", "sleep", "3600")
		c.VolumeMounts = []v1.VolumeMount{{Name: "mnt", MountPath: "/mnt", ReadOnly: true, RecursiveReadOnly: &enabled}}
		p := pod("rro", c)
		p.Spec.Volumes = []v1.Volume{{Name: "mnt", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		n.AddPod(p)
		require.True(t, n.StepUntil(time.Minute, func() bool {
			cs := n.Pod("default", "rro").Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError"
		}))
		assert.Contains(t, n.Pod("default", "rro").Status.ContainerStatuses[0].State.Waiting.Message,
			`failed to resolve recursive read-only mode: volume "mnt" requested recursive read-only mode, but it is not supported by the runtime`)
	})
}

// An ephemeral container added to a running pod (kubectl debug) runs and is
// reported in ephemeralContainerStatuses.
func TestEphemeralContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{})
		n.AddPod(pod("web", container("app", "sleep", "3600")))
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "web").Status.Phase == v1.PodRunning }))
		p := n.Pod("default", "web")
		p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "debugger", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}, TargetContainerName: "app"}}
		n.UpdatePod(p)
		require.True(t, n.StepUntil(time.Minute, func() bool {
			es := n.Pod("default", "web").Status.EphemeralContainerStatuses
			return len(es) == 1 && es[0].State.Running != nil
		}), "%+v", n.Pod("default", "web").Status.EphemeralContainerStatuses)
		assert.Equal(t, v1.PodRunning, n.Pod("default", "web").Status.Phase)
		assert.Equal(t, int32(0), n.Pod("default", "web").Status.ContainerStatuses[0].RestartCount, "the app was not touched")
	})
}
