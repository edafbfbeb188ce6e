//go:build apiserver

package apiserver_test

import (
	"context"
	"os/exec"
	"path/filepath"
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
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// sleeper is a pod bound to nodeName whose one container sleeps.
func sleeper(name, nodeName string) *v1.Pod {
	grace := int64(2)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  new(bool),
			Containers:                    []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}},
		},
	}
}

// createPod creates p in default and deletes it (grace 0) when the test ends.
func createPod(t *testing.T, admin kubernetes.Interface, p *v1.Pod) *v1.Pod {
	t.Helper()
	ctx := context.Background()
	created, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		zero := int64(0)
		_ = admin.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return created
}

// waitAPIPodRunning waits until the API server has the pod Running and
// Ready, and returns it.
func waitAPIPodRunning(t *testing.T, admin kubernetes.Interface, name string) *v1.Pod {
	t.Helper()
	var got *v1.Pod
	eventually(t, name+" Running and Ready", func() bool {
		var err error
		got, err = admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1.PodRunning && condition(*got, v1.PodReady) == v1.ConditionTrue
	})
	return got
}

// containersOf lists every container of the pod with uid, in any state.
func containersOf(t *testing.T, rt agent.Runtime, uid string) []*runtimeapi.Container {
	t.Helper()
	cs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{cri.PodUIDLabel: uid}})
	require.NoError(t, err)
	return cs
}

// resetNode deletes the node's Node and Lease, which earlier tests may have
// left, so that a test starts from a node the API server does not know.
func resetNode(t *testing.T, admin kubernetes.Interface, nodeName string) {
	t.Helper()
	ctx := context.Background()
	if err := admin.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	err := admin.CoordinationV1().Leases("kube-node-lease").Delete(ctx, nodeName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

// restartAPIServer restarts the control plane's kube-apiserver on the same
// port (hack/controlplane-start.sh --restart-apiserver) and returns once it
// is ready again.
func restartAPIServer(t *testing.T) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "controlplane-start.sh"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", script, "--restart-apiserver").CombinedOutput()
	require.NoError(t, err, "restart the API server:\n%s", out)
	t.Logf("%s", out)
}

// A restart of the API server ends every watch; the agent's informers
// resume (relisting when the new server no longer has their resource
// version) and neither lose a change made right after the restart nor run
// a pod twice.
func TestAPIServerRestartLosesNoPods(t *testing.T) {
	admin, nodeClient, nodeName := apiEnv(t)
	ctx := context.Background()
	suffix := rand.String(5)
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	n := startJoined(t, nodeClient, agent.Options{Runtime: rt, NodeName: nodeName, RootDir: filepath.Join(t.TempDir(), "root")},
		apiserver.JoinOptions{})

	before, after := "before-"+suffix, "after-"+suffix
	a := createPod(t, admin, sleeper(before, nodeName))
	running := waitAPIPodRunning(t, admin, before)
	require.Len(t, running.Status.ContainerStatuses, 1)
	containerID := running.Status.ContainerStatuses[0].ContainerID
	lease, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)

	restartAPIServer(t)

	// Right after the restart, before the informers are back: a new pod,
	// and the old one deleted.
	b := createPod(t, admin, sleeper(after, nodeName))
	require.NoError(t, admin.CoreV1().Pods("default").Delete(ctx, before, metav1.DeleteOptions{}))

	got := waitAPIPodRunning(t, admin, after)
	assert.Zero(t, got.Status.ContainerStatuses[0].RestartCount)
	eventually(t, "the deleted pod's object gone", func() bool {
		_, err := admin.CoreV1().Pods("default").Get(ctx, before, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	waitNoRunning(t, rt, string(a.UID))
	n.waitGone(before)

	// Nothing ran twice: the old pod's one container is the one it had
	// before the restart, the new pod has one container, and the agent
	// knows exactly the new pod.
	for _, c := range containersOf(t, rt, string(a.UID)) {
		assert.Equal(t, containerID, "kubeletkit-fake://"+c.Id, "the old pod's container was never re-created")
	}
	assert.Len(t, containersOf(t, rt, string(b.UID)), 1)
	pods := n.pods()
	assert.Len(t, pods, 1, "pods the agent runs: %v", keys(pods))
	assert.Contains(t, pods, after)

	// The node's lease goes on being renewed through the new server.
	eventually(t, "a lease renewal after the restart", func() bool {
		l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(lease.Spec.RenewTime.Time)
	})
}

// With --register-node=false the agent never creates its Node: it updates
// the status of the Node an administrator created, leaves its labels alone
// and renews its lease. Once the agent stops, the lease is no longer renewed
// and expires, which is what the node lifecycle controller (not part of
// this control plane) turns into NotReady.
func TestAPIServerUnregisteredNodeAndLeaseExpiry(t *testing.T) {
	admin, nodeClient, nodeName := apiEnv(t)
	ctx := context.Background()
	resetNode(t, admin, nodeName)
	t.Cleanup(func() { resetNode(t, admin, nodeName) })

	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	const leaseDuration = 4 * time.Second
	n := startJoined(t, nodeClient, agent.Options{Runtime: rt, NodeName: nodeName, RootDir: filepath.Join(t.TempDir(), "root")},
		apiserver.JoinOptions{SkipNodeRegistration: true, NodeLeaseDuration: leaseDuration})
	n.waitNodeCondition(v1.NodeReady, v1.ConditionTrue)

	// No Node appears until an administrator creates one.
	_, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the agent registered its Node: %v", err)
	_, err = admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName,
		Labels: map[string]string{"kubeletkit.io/registered-by": "admin"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitAPINodeReady(t, admin, nodeName)
	nd, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"kubeletkit.io/registered-by": "admin"}, nd.Labels, "labels are the administrator's")

	// The lease is renewed every quarter of its duration, and owned by
	// the Node.
	var first *coordinationv1.Lease
	eventually(t, "the node's Lease", func() bool {
		first, err = admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && first.Spec.RenewTime != nil
	})
	assert.Equal(t, int32(4), *first.Spec.LeaseDurationSeconds)
	var renewed *coordinationv1.Lease
	eventually(t, "a lease renewal", func() bool {
		renewed, err = admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && renewed.Spec.RenewTime.After(first.Spec.RenewTime.Time) && len(renewed.OwnerReferences) == 1
	})
	assert.Equal(t, nd.UID, renewed.OwnerReferences[0].UID)
	assert.Less(t, renewed.Spec.RenewTime.Sub(first.Spec.RenewTime.Time), leaseDuration, "renewed before it would expire")

	// The agent stops: the lease's last renewal stays, and it expires.
	n.stop()
	last, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	expiry := last.Spec.RenewTime.Add(time.Duration(*last.Spec.LeaseDurationSeconds) * time.Second)
	eventually(t, "the lease's expiry", func() bool { return time.Now().After(expiry.Add(time.Second)) })
	final, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, final.Spec.RenewTime.Equal(last.Spec.RenewTime), "renewed after the agent stopped: %s, then %s", last.Spec.RenewTime, final.Spec.RenewTime)
	assert.True(t, time.Now().After(final.Spec.RenewTime.Add(time.Duration(*final.Spec.LeaseDurationSeconds)*time.Second)), "the lease has expired")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
