//go:build apiserver && containerd

package apiserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// staticRunning reports whether the pod name, as minikubelet's read-only
// /pods at url shows it, is Running with its container running.
func staticRunning(url, name string) bool {
	p, ok := nodePod(url, name)
	return ok && p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
}

// Issue 35: minikubelet with --kubeconfig and no local state starts while
// its API server is down, as upstream kubelet does (kubeadm's static-pod
// control plane depends on it). The kube-apiserver is stopped
// (hack/controlplane-start.sh --stop-apiserver) and the Node deleted
// before minikubelet starts; its static pod must be Running on containerd,
// through its own read-only /pods, within 5s of the start, and the process
// must not exit. When the kube-apiserver is started again, the node
// registers and turns Ready, its lease is renewed, the static pod's mirror
// pod appears with the static pod's status (Running), and the events
// recorded during the outage reach the server.
func TestAPIServerDownAtStartOnContainerd(t *testing.T) {
	admin, _, nodeName := apiEnv(t)
	rt, image := ctrdtest.Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	logFile := filepath.Join(os.Getenv("KK_WORK"), "apidown-minikubelet.log")
	t.Logf("minikubelet's log: %s", logFile)
	bin := goBuild(t, dir, "github.com/kubeletkit/kubeletkit/examples/minikubelet")

	name := "apidown-" + rand.String(5)
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.MkdirAll(manifests, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "static.yaml"), fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %q, imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
`, name, image), 0o600))
	mirrorName := name + "-" + nodeName // a static pod's name takes the node's

	// The Node is registered anew: an earlier test's is deleted, with its
	// lease.
	err := admin.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "delete node %s: %v", nodeName, err)
	err = admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, nodeName, metav1.DeleteOptions{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "delete lease %s: %v", nodeName, err)

	root := filepath.Join(dir, "root")
	// Run after minikubelet is killed (cleanups run last registered
	// first): its pod's sandbox and mounts go, and the mirror pod.
	t.Cleanup(func() {
		removeSandboxes(t, rt, map[string]string{"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.name": mirrorName})
		unmountUnder(t, root)
		zero := int64(0)
		_ = admin.CoreV1().Pods("default").Delete(context.Background(), mirrorName, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})

	controlPlane(t, "--stop-apiserver")
	apiserverStopped := true
	t.Cleanup(func() {
		if apiserverStopped { // leave the control plane as the later tests need it
			controlPlane(t, "--start-apiserver")
		}
	})

	roPort := freePort(t)
	pods := fmt.Sprintf("http://127.0.0.1:%d", roPort)
	args := []string{"--kubeconfig", os.Getenv("KK_NODE_KUBECONFIG"), "--node-name", nodeName,
		"--container-runtime-endpoint", os.Getenv("KK_CRI_ENDPOINT"), "--root-dir", root,
		"--pod-manifest-path", manifests, "--local-state=", "--read-only-port", strconv.Itoa(roPort),
		"--port", strconv.Itoa(freePort(t)), "--healthz-port", "0", "--cgroups-per-qos=false", "--node-ip", "127.0.0.1",
		// The test machine's own disk must not evict or refuse the pod.
		"--eviction-hard="}
	start := time.Now()
	mk := startMinikubelet(t, bin, args, logFile)
	for !staticRunning(pods, mirrorName) {
		select {
		case <-mk.done:
			t.Fatalf("minikubelet exited %s after its start with the API server down: %s (see %s)", time.Since(start).Round(time.Millisecond), mk.cmd.ProcessState, logFile)
		default:
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the static pod is not Running 5s after minikubelet's start with the API server down (see %s)", logFile)
		}
		time.Sleep(50 * time.Millisecond) // polling a real process and runtime
	}
	t.Logf("the static pod Running %s after minikubelet's start, the API server down", time.Since(start).Round(time.Millisecond))
	cs, sandboxes := runningOf(t, rt, "default", mirrorName)
	assert.Len(t, cs["app"], 1, "the static pod's container runs on containerd")
	assert.Equal(t, 1, sandboxes)

	_, err = admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.Error(t, err, "the API server is down")

	// The kube-apiserver takes some seconds to start: minikubelet retries
	// meanwhile.
	controlPlane(t, "--start-apiserver")
	apiserverStopped = false
	back := time.Now()
	waitAPINodeReady(t, admin, nodeName)
	t.Logf("the Node registered and Ready %s after the API server was ready", time.Since(back).Round(time.Millisecond))
	eventually(t, "the mirror pod with the static pod's status", func() bool {
		m, err := admin.CoreV1().Pods("default").Get(ctx, mirrorName, metav1.GetOptions{})
		return err == nil && m.Annotations[podspec.ConfigMirrorAnnotation] != "" && m.Status.Phase == v1.PodRunning &&
			len(m.Status.ContainerStatuses) == 1 && m.Status.ContainerStatuses[0].State.Running != nil
	})
	t.Logf("the mirror pod Running %s after the API server was ready", time.Since(back).Round(time.Millisecond))
	m, err := admin.CoreV1().Pods("default").Get(ctx, mirrorName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", m.Status.HostIP)
	id, _ := strings.CutPrefix(m.Status.ContainerStatuses[0].ContainerID, "containerd://")
	assert.Equal(t, cs["app"][0].Id, id, "the status of the container that ran through the outage")
	eventually(t, "the lease renewed", func() bool {
		l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(back)
	})
	eventually(t, "the static pod's events, recorded while the server was down", func() bool {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", mirrorName).String()})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "Started" && e.Source.Host == nodeName && e.FirstTimestamp.Time.Before(back) {
				return true
			}
		}
		return false
	})
	select {
	case <-mk.done:
		t.Fatalf("minikubelet exited: %s (see %s)", mk.cmd.ProcessState, logFile)
	default:
	}
	cs, _ = runningOf(t, rt, "default", mirrorName)
	assert.Len(t, cs["app"], 1, "one container, never restarted")
}
