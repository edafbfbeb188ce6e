//go:build apiserver

package apiserver_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// The API-server scenarios run against the control plane of
// hack/controlplane-start.sh: its env file sets KK_KUBECONFIG (an admin),
// KK_NODE_KUBECONFIG and KK_NODE_NAME (a node's credentials, as a kubelet
// has them under the Node authorizer). A test that runs without them fails,
// saying how to set them, rather than skipping.

func clientFrom(t *testing.T, env string) kubernetes.Interface {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Fatalf("%s is not set: run hack/controlplane-start.sh and source its env file", env)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	// No connection outlives its request, so none is left open when the
	// test ends (client-go otherwise pools them in a process-wide cache).
	tlsConfig, err := rest.TLSConfigFor(rc)
	require.NoError(t, err)
	rt, err := rest.HTTPWrappersForConfig(rc, &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true})
	require.NoError(t, err)
	c, err := kubernetes.NewForConfigAndClient(rc, &http.Client{Transport: rt})
	require.NoError(t, err)
	return c
}

// apiEnv returns the control plane's admin client, the node's client and
// the node's name.
func apiEnv(t *testing.T) (admin, node kubernetes.Interface, nodeName string) {
	t.Helper()
	nodeName = os.Getenv("KK_NODE_NAME")
	require.NotEmpty(t, nodeName, "KK_NODE_NAME is not set: run hack/controlplane-start.sh and source its env file")
	return clientFrom(t, "KK_KUBECONFIG"), clientFrom(t, "KK_NODE_KUBECONFIG"), nodeName
}

// waitAPINodeReady waits until the API server has the Node Ready.
func waitAPINodeReady(t *testing.T, admin kubernetes.Interface, nodeName string) {
	t.Helper()
	eventually(t, "the Node Ready", func() bool {
		nd, err := admin.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

func TestAPIServerNodePodsVolumesMirrorPods(t *testing.T) {
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	apiScenario(t, rt, "busybox:1.36", "kubeletkit-fake://")
}

// apiScenario runs the API-server scenario on rt with image: the node
// registers and renews its lease, a pod from the API runs, reads its
// configMap and service account token and turns Ready, a configMap update
// reaches it, a static pod gets a mirror pod, and deletions go through.
func apiScenario(t *testing.T, rt agent.FullRuntime, image, idPrefix string) {
	admin, nodeClient, nodeName := apiEnv(t)
	ctx := context.Background()
	suffix := rand.String(5)

	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	staticName := "static-" + suffix
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte(`
apiVersion: v1
kind: Pod
metadata: {name: `+staticName+`}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: app, image: `+image+`, command: [sleep, "3600"]}
`), 0o600))
	startJoined(t, nodeClient, agent.Options{Runtime: rt, NodeName: nodeName, RootDir: filepath.Join(dir, "root"), Sources: agent.SourceOptions{ManifestPath: manifests}},
		apiserver.JoinOptions{NodeLabels: map[string]string{"kubeletkit.io/test": suffix}})

	// The node registers with its labels and turns Ready; its lease is
	// renewed by the node.
	waitAPINodeReady(t, admin, nodeName)
	nd, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, nodeName, nd.Labels["kubernetes.io/hostname"])
	assert.Equal(t, "linux", nd.Labels["kubernetes.io/os"])
	var lease *coordinationv1.Lease
	eventually(t, "the node's Lease", func() bool {
		lease, err = admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime != nil
	})
	assert.Equal(t, nodeName, *lease.Spec.HolderIdentity)
	assert.Equal(t, int32(40), *lease.Spec.LeaseDurationSeconds)

	// A pod bound to the node runs, reads its configMap, and turns Ready.
	cmName, podName := "cfg-"+suffix, "web-"+suffix
	_, err = admin.CoreV1().ConfigMaps("default").Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName},
		Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.CoreV1().ConfigMaps("default").Delete(ctx, cmName, metav1.DeleteOptions{}) })
	grace := int64(2) // busybox's sleep ignores SIGTERM as PID 1
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "web", Image: image, Command: []string{"sleep", "3600"},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/etc/config/greeting"}}}, PeriodSeconds: 1},
				VolumeMounts:   []v1.VolumeMount{{Name: "config", MountPath: "/etc/config"}},
			}},
			Volumes: []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cmName}}}}},
		},
	}
	created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		zero := int64(0)
		_ = admin.CoreV1().Pods("default").Delete(ctx, podName, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	var got *v1.Pod
	eventually(t, "the pod Running and Ready", func() bool {
		got, err = admin.CoreV1().Pods("default").Get(ctx, podName, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1.PodRunning && condition(*got, v1.PodReady) == v1.ConditionTrue
	})
	for _, c := range []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		assert.Equal(t, v1.ConditionTrue, condition(*got, c), c)
	}
	require.Len(t, got.Status.ContainerStatuses, 1)
	assert.NotEmpty(t, got.Status.HostIP, "with an API server the node's IP is reported")
	assert.True(t, got.Status.ContainerStatuses[0].Ready)
	assert.True(t, strings.HasPrefix(got.Status.ContainerStatuses[0].ContainerID, idPrefix))
	out, code := cat(t, rt, *got, "/etc/config/greeting")
	assert.Zero(t, code)
	assert.Equal(t, "hello", out)
	// The service account token the API server injected is mounted too.
	var tokenMount string
	for _, vm := range got.Spec.Containers[0].VolumeMounts {
		if strings.HasPrefix(vm.Name, "kube-api-access-") {
			tokenMount = vm.MountPath
		}
	}
	require.NotEmpty(t, tokenMount, "the ServiceAccount admission plugin adds a token volume")
	token, code := cat(t, rt, *got, tokenMount+"/token")
	assert.Zero(t, code)
	assert.Equal(t, 2, strings.Count(token, "."), "a JWT")
	eventually(t, "a Started event", func() bool {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + podName})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "Started" && e.Source.Component == "kubelet" && e.Source.Host == nodeName {
				return true
			}
		}
		return false
	})

	// The configMap changes, and the container sees it.
	cm, err := admin.CoreV1().ConfigMaps("default").Get(ctx, cmName, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["greeting"] = "bonjour"
	_, err = admin.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "the configMap update in the container", func() bool {
		out, _ := cat(t, rt, *got, "/etc/config/greeting")
		return out == "bonjour"
	})

	// The static pod has a mirror pod.
	mirrorName := staticName + "-" + nodeName
	eventually(t, "the mirror pod", func() bool {
		m, err := admin.CoreV1().Pods("default").Get(ctx, mirrorName, metav1.GetOptions{})
		return err == nil && m.Annotations[podspec.ConfigMirrorAnnotation] != "" && m.Status.Phase == v1.PodRunning
	})

	// Deleting the pod stops its containers within its grace period and
	// the pod object goes once it is terminal.
	deleted := time.Now()
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, podName, metav1.DeleteOptions{}))
	waitNoRunning(t, rt, string(created.UID))
	// The containers are killed at the end of the grace period; the slack
	// covers the watch, the sync and a loaded CI machine.
	assert.Less(t, time.Since(deleted), time.Duration(grace)*time.Second+10*time.Second, "containers stopped within the grace period")
	eventually(t, "the pod object gone", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, podName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// Removing the static manifest removes the mirror pod.
	require.NoError(t, os.Remove(filepath.Join(manifests, "static.yaml")))
	eventually(t, "the mirror pod gone", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, mirrorName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
