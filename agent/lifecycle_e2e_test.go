package agent_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// deadlinePod runs forever but may be active for one second only.
const deadlinePod = `
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: 1
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
`

// A pod past its activeDeadlineSeconds fails with upstream's reason and
// message: the sync loop syncs it the second its deadline passes (long
// before any periodic resync), its container is stopped at once, and it is
// never started again.
func TestActiveDeadlineFailsThePod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"deadline.yaml": deadlinePod})
		start := n.Now()
		failed := podIs(n, "deadline-node1", func(p v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && len(p.Status.ContainerStatuses) == 1 &&
				p.Status.ContainerStatuses[0].State.Terminated != nil
		})
		require.True(t, n.StepUntil(time.Minute, failed), "Failed with its containers stopped")
		// The container is stopped at 1s (below). The status manager holds
		// the terminal phase back while the pod worker could still have
		// running containers, as upstream's, and writes it as soon as the
		// workers finish the termination (podworkers' Terminated hook).
		assert.Equal(t, time.Second, n.Now().Sub(start), "Failed at")
		p := mustPod(t, n, "deadline-node1")
		assert.Equal(t, "DeadlineExceeded", p.Status.Reason)
		assert.Equal(t, "Pod was active on the node longer than the specified deadline", p.Status.Message)
		require.NotNil(t, p.Status.StartTime)
		assert.Zero(t, p.Status.StartTime.Sub(start))
		assert.Equal(t, v1.ConditionFalse, condition(p, v1.PodReady))
		term := p.Status.ContainerStatuses[0].State.Terminated
		assert.Equal(t, int32(143), term.ExitCode, "stopped by the kubelet")
		assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount, "a failed pod's containers are not restarted")
		assert.Equal(t, []string{
			`0s Normal Pulling: Pulling image "busybox:1.36"`,
			`0s Normal Pulled: Successfully pulled image "busybox:1.36" in 0s`,
			`0s Normal Created: Created container: app`,
			`0s Normal Started: Started container app`,
			"1s Normal DeadlineExceeded: Pod was active on the node longer than the specified deadline",
			"1s Normal Killing: Stopping container app",
		}, eventsAbout(n, start, "Pod default/deadline-node1"))

		n.Step(10 * time.Minute)
		p = mustPod(t, n, "deadline-node1")
		assert.Equal(t, v1.PodFailed, p.Status.Phase)
		assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount, "never restarted")
		assert.Equal(t, seconds(0), starts(n, start, "deadline-node1", "app"))
	})
}

// hookPod's postStart hook always fails.
const hookPod = `
apiVersion: v1
kind: Pod
metadata: {name: hook}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    lifecycle:
      postStart:
        exec: {command: ["false"]}
`

// A container whose postStart hook fails is killed, with upstream's events
// and waiting reason, and restarted under the crash-loop back-off.
func TestFailingPostStartHookKillsTheContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, _ := staticNode(t, agenttest.Options{}, map[string]string{"hook.yaml": hookPod})
		start := n.Now()
		// The container itself never exits: each instance is killed
		// because its hook failed, and the container ends up backing off.
		var hookErrors []string
		crashLoop := podIs(n, "hook-node1", func(p v1.Pod) bool {
			if len(p.Status.ContainerStatuses) != 1 {
				return false
			}
			cs := p.Status.ContainerStatuses[0]
			if w := cs.State.Waiting; w != nil && w.Reason == "PostStartHookError" && !slices.Contains(hookErrors, w.Message) {
				hookErrors = append(hookErrors, w.Message)
			}
			return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
		})
		require.True(t, n.StepUntil(5*time.Minute, crashLoop), "a crash loop")
		// The first instance's death is seen by the next relist: in the
		// same instant or a second later, as the relist and the kill fall.
		// Then the back-off: 10s, 20s.
		got := starts(n, start, "hook-node1", "app")
		require.Len(t, got, 4)
		assert.LessOrEqual(t, got[1]-got[0], time.Second, "the first restart")
		assert.Equal(t, []time.Duration{10 * time.Second, 20 * time.Second}, []time.Duration{got[2] - got[1], got[3] - got[2]}, "the back-off")
		assert.Equal(t, got[3], n.Now().Sub(start), "second back-off seen as the fourth instance fails")
		p := mustPod(t, n, "hook-node1")
		cs := p.Status.ContainerStatuses[0]
		assert.Equal(t, int32(2), cs.RestartCount)
		assert.Equal(t, "back-off 20s restarting failed container=app pod=hook-node1_default("+string(p.UID)+")", cs.State.Waiting.Message)
		require.NotNil(t, cs.LastTerminationState.Terminated)
		assert.Equal(t, int32(143), cs.LastTerminationState.Terminated.ExitCode, "killed, not exited")
		assert.Equal(t, v1.PodRunning, p.Status.Phase)
		assert.Equal(t, []string{`Exec lifecycle hook ([false]) for Container "app" in Pod "hook-node1_default(` + string(p.UID) +
			`)" failed - error: command 'false' exited with 1: , message: ""`}, hookErrors, "upstream's message")

		// Every instance: created, started, its hook failed (the event
		// keeps the hook's output out, as upstream's), killed.
		var seen []string
		for _, e := range eventsAbout(n, start, "Pod default/hook-node1") {
			_, rest, _ := strings.Cut(e, " ")
			if !strings.Contains(rest, " Pull") && !strings.Contains(rest, " BackOff:") {
				seen = append(seen, rest)
			}
		}
		instance := []string{
			"Normal Created: Created container: app",
			"Normal Started: Started container app",
			"Warning FailedPostStartHook: PostStartHook failed",
			"Normal Killing: FailedPostStartHook",
		}
		assert.Equal(t, slices.Concat(instance, instance, instance, instance), seen)
	})
}

// envPod takes variables from a configMap (all its keys, prefixed), a
// secret key and a configMap that does not exist yet.
const envPod = `
apiVersion: v1
kind: Pod
metadata: {name: envs}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    envFrom:
    - configMapRef: {name: app-config}
      prefix: CFG_
    env:
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: app-creds, key: password}}
    - name: LATER
      valueFrom: {configMapKeyRef: {name: later, key: k}}
`

const laterConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: later}
data: {k: v}
`

// A container whose environment names a configMap that does not exist is
// held in CreateContainerConfigError, with upstream's message, until the
// configMap appears; then it starts with every variable.
func TestEnvironmentFromConfigMapsAndSecrets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		objects := t.TempDir()
		writeFile(t, objects, "config.yaml", strings.Replace(configMap, "GREETING", "hello", 1))
		writeFile(t, objects, "secret.yaml", secret)
		n, dir := staticNode(t, agenttest.Options{Agent: agent.Options{Sources: agent.SourceOptions{ObjectPath: objects}}}, nil)
		// The objects were read as the agent started; the manifest comes
		// after, at the next poll of the directory.
		writeFile(t, dir, "envs.yaml", envPod)
		start := n.Now()
		held := podIs(n, "envs-node1", func(p v1.Pod) bool {
			if len(p.Status.ContainerStatuses) != 1 {
				return false
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError"
		})
		require.True(t, n.StepUntil(time.Minute, held), "CreateContainerConfigError")
		p := mustPod(t, n, "envs-node1")
		assert.Equal(t, `configmap "later" not found`, p.Status.ContainerStatuses[0].State.Waiting.Message)
		assert.Equal(t, v1.PodPending, p.Status.Phase)
		assert.Empty(t, n.Runtime().CallsOf(fake.CreateContainer), "no container created")
		assert.Contains(t, eventsAbout(n, start, "Pod default/envs-node1"), `1s Warning Failed: Error: configmap "later" not found`)

		// Once it exists, the container starts with every variable, at
		// the worker's first retry after the object directory was read
		// again.
		writeFile(t, objects, "later.yaml", laterConfigMap)
		running := podIs(n, "envs-node1", func(p v1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		})
		require.True(t, n.StepUntil(2*time.Minute, running), "Running")
		creates := n.Runtime().CallsOf(fake.CreateContainer)
		require.Len(t, creates, 1)
		env := map[string]string{}
		for _, kv := range creates[0].Request.(*runtimeapi.CreateContainerRequest).GetConfig().GetEnvs() {
			env[kv.GetKey()] = string(kv.GetValue())
		}
		assert.Equal(t, map[string]string{"CFG_greeting": "hello", "PASSWORD": "s3cr3t", "LATER": "v"}, env)
		assert.Equal(t, seconds(22), starts(n, start, "envs-node1", "app"))
	})
}

// Without an object directory, as upstream's kubelet, a static pod that
// references a secret or a configMap is refused with a FailedValidation
// event, and the other pods run.
func TestStaticPodReferencingAPIObjectsIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, dir := staticNode(t, agenttest.Options{}, map[string]string{"refs.yaml": envPod, "web.yaml": webPod})
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isReady)), "web Ready")
		n.Step(time.Minute) // the manifests are read again
		assert.Nil(t, n.Pod("default", "envs-node1"), "a static pod that references a secret does not run")
		assert.False(t, listed(n, "envs-node1"))
		var refused []string
		for _, e := range n.Events() {
			if e.Reason == "FailedValidation" {
				refused = append(refused, e.String())
			}
		}
		assert.Equal(t, []string{"Node node1 Warning FailedValidation Error reading static pod manifest " + filepath.Join(dir, "refs.yaml") +
			": invalid pod default/envs-node1: static pods may not reference secrets"}, refused, "once")
		for _, c := range n.Runtime().Containers() {
			assert.NotEqual(t, "envs-node1", c.GetLabels()["io.kubernetes.pod.name"], "no container of the refused pod")
		}
	})
}
