package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri"
)

// volumePod mounts one volume of each kind the agent supports without an
// API server; its readiness probe reads the configMap through the mount.
const volumePod = `
apiVersion: v1
kind: Pod
metadata:
  name: vols
  labels: {app: vols}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    readinessProbe:
      exec: {command: [cat, /etc/config/greeting]}
      periodSeconds: 1
    volumeMounts:
    - {name: config, mountPath: /etc/config}
    - {name: creds, mountPath: /etc/creds}
    - {name: scratch, mountPath: /scratch}
    - {name: host, mountPath: /host}
    - {name: info, mountPath: /etc/info}
    - {name: all, mountPath: /etc/all}
    - {name: config, mountPath: /etc/greeting, subPath: greeting}
    - {name: scratch, mountPath: /logs, subPath: app/logs}
  volumes:
  - name: config
    configMap: {name: app-config}
  - name: creds
    secret: {secretName: app-creds, defaultMode: 0400}
  - name: scratch
    emptyDir: {}
  - name: host
    hostPath: {path: HOSTDIR, type: DirectoryOrCreate}
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
  - name: all
    projected:
      sources:
      - configMap:
          name: app-config
          items: [{key: greeting, path: hello}]
      - secret:
          name: app-creds
          items: [{key: password, path: pw}]
`

const configMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {greeting: GREETING}
`

const secret = `
apiVersion: v1
kind: Secret
metadata: {name: app-creds}
stringData: {password: s3cr3t}
`

// cat runs cat in the pod's container and returns what it printed.
func cat(t *testing.T, rt cri.Execer, p v1.Pod, files ...string) (string, int32) {
	t.Helper()
	_, id, ok := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	require.True(t, ok, p.Status.ContainerStatuses[0].ContainerID)
	resp, err := rt.ExecSync(context.Background(), id, append([]string{"cat"}, files...), 10*time.Second)
	require.NoError(t, err)
	return string(resp.Stdout), resp.ExitCode
}

// checkMountedFiles checks what volumePod's container reads through each
// of its mounts, once the test has written "from the host" to motd in the
// hostPath directory and "through the volume" to app/logs/written in the
// emptyDir.
func checkMountedFiles(t *testing.T, rt cri.Execer, p v1.Pod) {
	t.Helper()
	for _, tc := range []struct{ file, want string }{
		{"/etc/config/greeting", "hello"},
		{"/etc/creds/password", "s3cr3t"},
		{"/etc/info/labels", `app="vols"`},
		{"/etc/all/hello", "hello"},
		{"/etc/all/pw", "s3cr3t"},
		{"/host/motd", "from the host"},
		{"/etc/greeting", "hello"},
		{"/logs/written", "through the volume"},
	} {
		out, code := cat(t, rt, p, tc.file)
		assert.Zero(t, code, tc.file)
		assert.Equal(t, tc.want, out, tc.file)
	}
	_, code := cat(t, rt, p, "/etc/config/../creds/missing")
	assert.Equal(t, int32(1), code)
}

// A container reads its mounted files; a configMap update reaches it; the
// volumes go with the pod.
func TestContainerReadsMountedFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		objects, hostDir, root := t.TempDir(), filepath.Join(t.TempDir(), "host"), t.TempDir()
		writeFile(t, objects, "config.yaml", strings.Replace(configMap, "GREETING", "hello", 1))
		writeFile(t, objects, "secret.yaml", secret)
		n, dir := staticNode(t, agenttest.Options{Agent: agent.Options{Sources: agent.SourceOptions{ObjectPath: objects}, RootDir: root}}, nil)
		start := n.Now()
		// The objects were read as the agent started; the manifest comes
		// after, at the next poll of the directory (1s), and the readiness
		// probe runs as soon as a status finds the container up.
		writeFile(t, dir, "vols.yaml", strings.Replace(volumePod, "HOSTDIR", hostDir, 1))
		require.True(t, n.StepUntil(time.Minute, podIs(n, "vols-node1", isReady)), "Ready (its probe reads the configMap)")
		assert.Equal(t, time.Second, n.Now().Sub(start), "Ready at")
		p := mustPod(t, n, "vols-node1")
		require.NoError(t, os.WriteFile(filepath.Join(hostDir, "motd"), []byte("from the host"), 0o644))
		// What lands in the emptyDir's subPath shows at its mount.
		scratch := filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
		require.NoError(t, os.WriteFile(filepath.Join(scratch, "app", "logs", "written"), []byte("through the volume"), 0o644))
		checkMountedFiles(t, n.Runtime(), p)

		// The secret is written with the mode asked for, on the host too.
		secretDir := filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~secret", "creds")
		fi, err := os.Stat(filepath.Join(secretDir, "password"))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o400), fi.Mode().Perm())

		// A new greeting reaches the running container when the object
		// directory is read again (every 20s from the start): the agent
		// then writes the volumes again at once.
		writeFile(t, objects, "config.yaml", strings.Replace(configMap, "GREETING", "bonjour", 1))
		require.True(t, n.StepUntil(5*time.Minute, func() bool { out, _ := cat(t, n.Runtime(), p, "/etc/config/greeting"); return out == "bonjour" }),
			"the configMap update did not reach the container")
		assert.Equal(t, 20*time.Second, n.Now().Sub(start), "bonjour at")
		out, _ := cat(t, n.Runtime(), p, "/etc/all/hello")
		assert.Equal(t, "bonjour", out, "the projected volume too")

		// Removing the pod tears its volumes down and removes its
		// directory.
		require.NoError(t, os.Remove(filepath.Join(dir, "vols.yaml")))
		require.True(t, n.StepUntil(time.Minute, func() bool { return !listed(n, "vols-node1") }), "vols-node1 still listed")
		gone := func() bool { _, err := os.Stat(filepath.Join(root, "pods", string(p.UID))); return os.IsNotExist(err) }
		require.True(t, n.StepUntil(time.Minute, gone), "the directory of pod %s is still there", p.UID)
		_, err = os.Stat(filepath.Join(hostDir, "motd"))
		assert.NoError(t, err, "a hostPath outlives the pod")
	})
}

// A static pod whose configMap volume's configMap does not exist waits in
// ContainerCreating with a FailedMount event; the other pods run.
func TestMissingConfigMapHoldsOnlyItsPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// An object directory without the configMap: static pods may
		// reference objects, and this one is missing.
		n, _ := staticNode(t, agenttest.Options{Agent: agent.Options{Sources: agent.SourceOptions{ObjectPath: t.TempDir()}}}, map[string]string{
			"broken.yaml": `
apiVersion: v1
kind: Pod
metadata: {name: needs}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    volumeMounts: [{name: config, mountPath: /etc/config}]
  volumes:
  - name: config
    configMap: {name: absent}
`,
			"web.yaml": webPod,
		})
		start := n.Now()
		require.True(t, n.StepUntil(time.Minute, podIs(n, "web-node1", isReady)), "web Ready")
		n.Step(3 * time.Minute)
		p := mustPod(t, n, "needs-node1")
		assert.Equal(t, v1.PodPending, p.Status.Phase)
		require.Len(t, p.Status.ContainerStatuses, 1)
		require.NotNil(t, p.Status.ContainerStatuses[0].State.Waiting)
		assert.Equal(t, "ContainerCreating", p.Status.ContainerStatuses[0].State.Waiting.Reason)
		// Each failed mount is an event, retried after 500ms doubling up
		// to 2m2s; the pod's sync gives up waiting after 2m3s and says
		// so, as upstream's volume manager.
		const setUp = `Warning FailedMount: MountVolume.SetUp failed for volume "config" : configmap "absent" not found`
		var setUps []time.Duration
		var timedOut []string
		for _, e := range eventsAbout(n, start, "Pod default/needs-node1") {
			at, rest, _ := strings.Cut(e, " ")
			switch d, _ := time.ParseDuration(at); {
			case rest == setUp:
				setUps = append(setUps, d)
			case strings.HasPrefix(rest, "Warning FailedMount: Unable to attach or mount volumes: "):
				timedOut = append(timedOut, e)
			default:
				t.Errorf("unexpected event %q", e)
			}
		}
		assert.Equal(t, seconds(0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5, 63.5, 127.5), setUps)
		require.Len(t, timedOut, 1)
		assert.True(t, strings.HasPrefix(timedOut[0], "2m3s Warning FailedMount: Unable to attach or mount volumes: unmounted volumes=[config], unattached volumes=[], failed to process volumes=[]: "), timedOut[0])
		for _, c := range n.Runtime().Containers() {
			assert.NotEqual(t, "needs-node1", c.GetLabels()["io.kubernetes.pod.name"], "no container starts without its volumes")
		}
		assert.Equal(t, v1.PodRunning, mustPod(t, n, "web-node1").Status.Phase)
	})
}
