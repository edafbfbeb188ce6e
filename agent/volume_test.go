package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/internal/eventtest"
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

// volumeNode runs an agent on rt (nil: the embedded fake) with a manifest
// and an object directory, and writes the objects and the pod.
func volumeNode(t *testing.T, rt agent.Runtime, image, name string) (n *node, objects, hostDir, podName string) {
	t.Helper()
	dir := t.TempDir()
	manifests, objects, hostDir := filepath.Join(dir, "manifests"), filepath.Join(dir, "objects"), filepath.Join(dir, "host")
	for _, d := range []string{manifests, objects} {
		require.NoError(t, os.Mkdir(d, 0o750))
	}
	n = startNodeWith(t, agent.Options{Runtime: rt, RootDir: filepath.Join(dir, "root"), ManifestPath: manifests, ObjectPath: objects})
	require.NoError(t, os.WriteFile(filepath.Join(objects, "config.yaml"), []byte(strings.Replace(configMap, "GREETING", "hello", 1)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(objects, "secret.yaml"), []byte(secret), 0o600))
	m := strings.ReplaceAll(strings.Replace(volumePod, "HOSTDIR", hostDir, 1), "busybox:1.36", image)
	m = strings.Replace(m, "name: vols", "name: "+name, 1)
	if rt != nil {
		m = strings.Replace(m, "spec:\n", "spec:\n  terminationGracePeriodSeconds: 2\n", 1)
	}
	n.write("vols.yaml", m)
	return n, objects, hostDir, name + "-node1"
}

// cat runs cat in the pod's container and returns what it printed.
func cat(t *testing.T, rt agent.Runtime, p v1.Pod, files ...string) (string, int32) {
	t.Helper()
	_, id, ok := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	require.True(t, ok, p.Status.ContainerStatuses[0].ContainerID)
	resp, err := rt.ExecSync(context.Background(), id, append([]string{"cat"}, files...), 10*time.Second)
	require.NoError(t, err)
	return string(resp.Stdout), resp.ExitCode
}

// checkVolumes runs the scenario: a container reads its mounted files, a
// configMap update reaches it, and the volumes go with the pod.
func checkVolumes(t *testing.T, n *node, rt agent.Runtime, objects, hostDir, podName string) {
	p := n.waitPod(podName, "Ready (its probe reads the configMap)", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "motd"), []byte("from the host"), 0o644))
	// What lands in the emptyDir's subPath shows at its mount.
	scratch := filepath.Join(n.root, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "app", "logs", "written"), []byte("through the volume"), 0o644))

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

	// The secret is written with the mode asked for, on the host too.
	uid := string(p.UID)
	secretDir := filepath.Join(n.root, "pods", uid, "volumes", "kubernetes.io~secret", "creds")
	st, err := os.Stat(filepath.Join(secretDir, "password"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o400), st.Mode().Perm())

	// A new greeting reaches the running container.
	require.NoError(t, os.WriteFile(filepath.Join(objects, "config.yaml"), []byte(strings.Replace(configMap, "GREETING", "bonjour", 1)), 0o600))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if out, _ := cat(t, rt, p, "/etc/config/greeting"); out == "bonjour" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the configMap update did not reach the container")
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}

	// Removing the pod tears its volumes down and removes its directory.
	require.NoError(t, os.Remove(filepath.Join(n.manifests, "vols.yaml")))
	n.waitGone(podName)
	deadline = time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(n.root, "pods", uid)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the directory of pod %s is still there", uid)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	_, err = os.Stat(filepath.Join(hostDir, "motd"))
	assert.NoError(t, err, "a hostPath outlives the pod")
}

func TestContainerReadsMountedFiles(t *testing.T) {
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	n, objects, hostDir, podName := volumeNode(t, rt, "busybox:1.36", "vols")
	checkVolumes(t, n, rt, objects, hostDir, podName)
}

func TestMissingConfigMapHoldsOnlyItsPod(t *testing.T) {
	// An object directory without the configMap: static pods may reference
	// objects, and this one is missing.
	dir := t.TempDir()
	manifests, objects := filepath.Join(dir, "manifests"), filepath.Join(dir, "objects")
	for _, d := range []string{manifests, objects} {
		require.NoError(t, os.Mkdir(d, 0o750))
	}
	rec := &eventtest.Recorder{}
	n := startNodeWith(t, agent.Options{RootDir: filepath.Join(dir, "root"), ManifestPath: manifests, ObjectPath: objects, Recorder: rec})
	n.write("broken.yaml", `
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
`)
	n.write("web.yaml", webPod)
	n.waitPod("web-node1", "Ready", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	p := n.waitPod("needs-node1", "waiting in ContainerCreating", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil
	})
	assert.Equal(t, v1.PodPending, p.Status.Phase)
	assert.Equal(t, "ContainerCreating", p.Status.ContainerStatuses[0].State.Waiting.Reason)
	assert.True(t, hasEvent(rec, v1.EventTypeWarning, "FailedMount"), "events: %q", rec.Strings())
	cs, err := n.a.Runtime().ListContainers(context.Background(), nil)
	require.NoError(t, err)
	for _, c := range cs {
		assert.NotEqual(t, string(p.UID), c.GetLabels()[cri.PodUIDLabel], "no container starts without its volumes")
	}
}
