package agent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/internal/eventtest"
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

func TestActiveDeadlineFailsThePod(t *testing.T) {
	// No periodic resync within the test's time: only the deadline can
	// sync the pod once it runs.
	timings := fast
	timings.Resync = time.Hour
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	n := startNodeWith(t, agent.Options{RootDir: filepath.Join(dir, "root"), ManifestPath: manifests, Timings: timings})
	n.write("deadline.yaml", deadlinePod)
	p := n.waitPod("deadline-node1", "Failed with its containers stopped", func(p v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	assert.Equal(t, "DeadlineExceeded", p.Status.Reason)
	assert.Equal(t, "Pod was active on the node longer than the specified deadline", p.Status.Message)
	require.NotNil(t, p.Status.StartTime)
	assert.Equal(t, v1.ConditionFalse, condition(p, v1.PodReady))
	term := p.Status.ContainerStatuses[0].State.Terminated
	assert.Equal(t, int32(143), term.ExitCode, "stopped by the kubelet")
	assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount, "a failed pod's containers are not restarted")
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

func TestFailingPostStartHookKillsTheContainer(t *testing.T) {
	n := newNode(t)
	n.write("hook.yaml", hookPod)
	// The container itself never exits: each instance is killed because
	// its hook failed, and the container ends up backing off.
	p := n.waitPod("hook-node1", "a crash loop", func(p v1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	cs := p.Status.ContainerStatuses[0]
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(143), cs.LastTerminationState.Terminated.ExitCode, "killed, not exited")
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
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

func TestEnvironmentFromConfigMapsAndSecrets(t *testing.T) {
	dir := t.TempDir()
	manifests, objects := filepath.Join(dir, "manifests"), filepath.Join(dir, "objects")
	for _, d := range []string{manifests, objects} {
		require.NoError(t, os.Mkdir(d, 0o750))
	}
	require.NoError(t, os.WriteFile(filepath.Join(objects, "config.yaml"), []byte(strings.Replace(configMap, "GREETING", "hello", 1)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(objects, "secret.yaml"), []byte(secret), 0o600))
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	n := startNodeWith(t, agent.Options{Runtime: rt, RootDir: filepath.Join(dir, "root"), ManifestPath: manifests, ObjectPath: objects})
	n.write("envs.yaml", envPod)

	// A reference to a configMap that does not exist holds the container,
	// with upstream's reason and message. (The object directory is read
	// on its own period, so the pod may first meet a missing app-config
	// too.)
	n.waitPod("envs-node1", "CreateContainerConfigError for the missing configMap", func(p v1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == `configmap "later" not found`
	})

	// Once it exists, the container starts with every variable.
	require.NoError(t, os.WriteFile(filepath.Join(objects, "later.yaml"), []byte(laterConfigMap), 0o600))
	n.waitPod("envs-node1", "Running", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	creates := rt.CallsOf(fake.CreateContainer)
	require.Len(t, creates, 1)
	env := map[string]string{}
	for _, kv := range creates[0].Request.(*runtimeapi.CreateContainerRequest).GetConfig().GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	assert.Equal(t, map[string]string{"CFG_greeting": "hello", "PASSWORD": "s3cr3t", "LATER": "v"}, env)
}

func TestStaticPodReferencingAPIObjectsIsRefused(t *testing.T) {
	// Without an object directory, as upstream's kubelet: the manifest is
	// refused, the other pods run.
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	rec := &eventtest.Recorder{}
	n := startNodeWith(t, agent.Options{RootDir: filepath.Join(dir, "root"), ManifestPath: manifests, Recorder: rec})
	n.write("refs.yaml", envPod)
	n.write("web.yaml", webPod)
	n.waitPod("web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	_, ok := n.pods()["envs-node1"]
	assert.False(t, ok, "a static pod that references a secret does not run")
	assert.True(t, hasEvent(rec, v1.EventTypeWarning, "FailedValidation"), "events: %q", rec.Strings())
}

// hasEvent tells whether rec recorded an event of that type and reason.
func hasEvent(rec *eventtest.Recorder, eventtype, reason string) bool {
	return slices.ContainsFunc(rec.Events(), func(e eventtest.Event) bool { return e.Type == eventtype && e.Reason == reason })
}
