//go:build containerd

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
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
)

// Helpers of containerd_test.go on the real-clock harness of
// realclock_test.go: waits that only its scenarios need, and the volume
// scenario of TestContainerReadsMountedFiles.

// waitGone polls /pods until the pod is no longer listed.
func (n *node) waitGone(name string) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := n.pods()[name]; !ok {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	n.t.Fatalf("pod %s still listed", name)
}

// waitNoRunning polls the runtime until the pod has no running container.
func waitNoRunning(t *testing.T, rt agent.Runtime, uid string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
			LabelSelector: map[string]string{cri.PodUIDLabel: uid}})
		require.NoError(t, err)
		if len(cs) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	t.Fatalf("pod %s still has running containers", uid)
}

// volumeNode runs an agent on rt with a manifest and an object directory,
// and writes the objects and the pod.
func volumeNode(t *testing.T, rt agent.FullRuntime, image, name string) (n *node, objects, hostDir, podName string) {
	t.Helper()
	dir := t.TempDir()
	manifests, objects, hostDir := filepath.Join(dir, "manifests"), filepath.Join(dir, "objects"), filepath.Join(dir, "host")
	for _, d := range []string{manifests, objects} {
		require.NoError(t, os.Mkdir(d, 0o750))
	}
	n = startNodeWith(t, agent.Options{Runtime: rt, RootDir: filepath.Join(dir, "root"), Sources: agent.SourceOptions{ManifestPath: manifests, ObjectPath: objects}})
	require.NoError(t, os.WriteFile(filepath.Join(objects, "config.yaml"), []byte(strings.Replace(configMap, "GREETING", "hello", 1)), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(objects, "secret.yaml"), []byte(secret), 0o600))
	m := strings.ReplaceAll(strings.Replace(volumePod, "HOSTDIR", hostDir, 1), "busybox:1.36", image)
	m = strings.Replace(m, "name: vols", "name: "+name, 1)
	m = strings.Replace(m, "spec:\n", "spec:\n  terminationGracePeriodSeconds: 2\n", 1)
	n.write("vols.yaml", m)
	return n, objects, hostDir, name + "-node1"
}

// checkVolumes runs the scenario: a container reads its mounted files, a
// configMap update reaches it, and the volumes go with the pod.
func checkVolumes(t *testing.T, n *node, rt agent.FullRuntime, objects, hostDir, podName string) {
	p := n.waitPod(podName, "Ready (its probe reads the configMap)", func(p v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "motd"), []byte("from the host"), 0o644))
	// What lands in the emptyDir's subPath shows at its mount.
	scratch := filepath.Join(n.root, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", "scratch")
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "app", "logs", "written"), []byte("through the volume"), 0o644))
	checkMountedFiles(t, rt, p)

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
