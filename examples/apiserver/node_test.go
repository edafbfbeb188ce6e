package apiserver_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/status/node"
)

func nodeStatus(ready v1.ConditionStatus) v1.NodeStatus {
	return v1.NodeStatus{
		Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")},
		Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: ready, Reason: "KubeletReady"}},
		Addresses:   []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}},
		NodeInfo:    v1.NodeSystemInfo{KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64"},
	}
}

func newNodeSink(t *testing.T, opts apiserver.NodeSinkOptions, objs ...runtime.Object) (*apiserver.NodeSink, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	opts.Retry = fastRetry
	s, err := apiserver.NewNodeSink(client, "n1", opts)
	require.NoError(t, err)
	return s, client
}

func TestNewNodeSinkArguments(t *testing.T) {
	_, err := apiserver.NewNodeSink(nil, "n1", apiserver.NodeSinkOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	_, err = apiserver.NewNodeSink(fake.NewClientset(), "", apiserver.NodeSinkOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}

func TestNodeSinkRegistersOnFirstStatus(t *testing.T) {
	taint := v1.Taint{Key: "edge", Effect: v1.TaintEffectNoSchedule}
	s, client := newNodeSink(t, apiserver.NodeSinkOptions{
		Hostname: "host-1", OS: "linux", Arch: "arm64",
		Labels: map[string]string{"zone": "z1", v1.LabelOSStable: "windows"},
		Taints: []v1.Taint{taint}, ProviderID: "kind://docker/kind/n1",
	})
	require.False(t, s.Registered())
	st := nodeStatus(v1.ConditionFalse)
	require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", st))
	require.True(t, s.Registered())

	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"kubernetes.io/hostname": "host-1",
		"kubernetes.io/os":       "linux", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "arm64", "beta.kubernetes.io/arch": "arm64",
		"zone": "z1",
	}, n.Labels, "extra labels never override the default ones")
	assert.Equal(t, []v1.Taint{taint}, n.Spec.Taints)
	assert.Equal(t, "kind://docker/kind/n1", n.Spec.ProviderID)
	assert.Equal(t, st, n.Status)
	assert.Equal(t, 1, count(client.Actions(), "create", "nodes", ""))
	assert.Equal(t, 0, count(client.Actions(), "patch", "nodes", "status"), "created with its status")

	// Unchanged: nothing to patch.
	require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", st))
	assert.Equal(t, 0, count(client.Actions(), "patch", "nodes", "status"))

	// Ready: a patch of nodes/status.
	ready := nodeStatus(v1.ConditionTrue)
	require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", ready))
	assert.Equal(t, 1, count(client.Actions(), "patch", "nodes", "status"))
	assert.Equal(t, 1, count(client.Actions(), "create", "nodes", ""), "registered once")
	n, err = client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ready, n.Status)
}

func TestNodeSinkReconcilesAnExistingNode(t *testing.T) {
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "old-uid", Labels: map[string]string{
			"kubernetes.io/hostname": "n1", "kubernetes.io/os": "windows", "team": "a",
		}},
		Status: nodeStatus(v1.ConditionUnknown),
	}
	s, client := newNodeSink(t, apiserver.NodeSinkOptions{OS: "linux", Arch: "amd64", Labels: map[string]string{"zone": "z1"}}, existing)
	st := nodeStatus(v1.ConditionTrue)
	require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", st))
	assert.True(t, s.Registered())

	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "old-uid", string(n.UID), "the same Node")
	assert.Equal(t, map[string]string{
		"kubernetes.io/hostname": "n1",
		"kubernetes.io/os":       "linux", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "beta.kubernetes.io/arch": "amd64",
		"team": "a",
	}, n.Labels, "default labels reconciled, others kept, extra labels only at creation")
	assert.Equal(t, st, n.Status)
}

func TestNodeSinkSkipRegistration(t *testing.T) {
	s, client := newNodeSink(t, apiserver.NodeSinkOptions{SkipRegistration: true, Labels: map[string]string{"zone": "z1"}})
	// No Node: the sink waits for someone else to create it.
	err := s.UpdateNodeStatus(t.Context(), "n1", nodeStatus(v1.ConditionTrue))
	require.ErrorIs(t, err, node.ErrNodeNotFound)
	assert.False(t, s.Registered())
	assert.Equal(t, 0, count(client.Actions(), "create", "nodes", ""), "never registers")

	// An administrator creates it: its status is patched, its labels are
	// left as they are.
	_, err = client.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "admin-uid",
		Labels: map[string]string{"kubernetes.io/os": "windows"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	st := nodeStatus(v1.ConditionTrue)
	require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", st))
	assert.True(t, s.Registered())
	n, err := client.CoreV1().Nodes().Get(t.Context(), "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, st, n.Status)
	assert.Equal(t, map[string]string{"kubernetes.io/os": "windows"}, n.Labels, "labels untouched")
	assert.Equal(t, 1, count(client.Actions(), "create", "nodes", ""), "the administrator's only")
	assert.Equal(t, 0, count(client.Actions(), "patch", "nodes", ""), "only nodes/status is patched")

	// Its lease is owned by the Node found.
	holder := "n1"
	created, err := s.CreateLease(t.Context(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: node.DefaultLeaseNamespace, Name: "n1"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}})
	require.NoError(t, err)
	require.Len(t, created.OwnerReferences, 1)
	assert.Equal(t, "admin-uid", string(created.OwnerReferences[0].UID))
}

func TestNodeSinkErrors(t *testing.T) {
	s, client := newNodeSink(t, apiserver.NodeSinkOptions{})
	err := s.UpdateNodeStatus(t.Context(), "n2", nodeStatus(v1.ConditionTrue))
	require.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), `"n2"`)

	require.NoError(t, s.UpdateNodeStatus(t.Context(), "n1", nodeStatus(v1.ConditionTrue)))
	require.NoError(t, client.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}))
	err = s.UpdateNodeStatus(t.Context(), "n1", nodeStatus(v1.ConditionFalse))
	assert.ErrorIs(t, err, node.ErrNodeNotFound)
}

func TestNodeSinkLeases(t *testing.T) {
	s, client := newNodeSink(t, apiserver.NodeSinkOptions{}, testNode("n1", "node-uid"))
	ctx := t.Context()
	_, err := s.GetLease(ctx, node.DefaultLeaseNamespace, "n1")
	require.ErrorIs(t, err, node.ErrLeaseNotFound)

	holder, secs := "n1", int32(40)
	renew := metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: node.DefaultLeaseNamespace, Name: "n1"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &renew},
	}
	created, err := s.CreateLease(ctx, lease)
	require.NoError(t, err)
	assert.Empty(t, lease.OwnerReferences, "the caller's lease is not modified")
	require.Len(t, created.OwnerReferences, 1)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}, created.OwnerReferences[0])

	got, err := s.GetLease(ctx, node.DefaultLeaseNamespace, "n1")
	require.NoError(t, err)
	later := metav1.NewMicroTime(renew.Add(10 * time.Second))
	got.Spec.RenewTime = &later
	updated, err := s.UpdateLease(ctx, got)
	require.NoError(t, err)
	assert.True(t, later.Equal(updated.Spec.RenewTime))

	stored, err := client.CoordinationV1().Leases(node.DefaultLeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n1", *stored.Spec.HolderIdentity)
	assert.Equal(t, int32(40), *stored.Spec.LeaseDurationSeconds)

	require.NoError(t, client.CoordinationV1().Leases(node.DefaultLeaseNamespace).Delete(ctx, "n1", metav1.DeleteOptions{}))
	_, err = s.UpdateLease(ctx, got)
	assert.ErrorIs(t, err, node.ErrLeaseNotFound)
}

// While the API server does not answer, the registration is tried again
// with back-off (800ms doubling to 7s) until the call's context ends, with
// one warning; the next call goes on and registers once the server
// answers.
func TestNodeSinkRegistersOnceTheServerAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		server := newAwayServer(client)
		var attempts []time.Duration
		begin := time.Now()
		client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			attempts = append(attempts, time.Since(begin))
			return false, nil, nil // on to the away server's reactor, or the tracker
		})
		var logs logRecords
		s, err := apiserver.NewNodeSink(client, "n1", apiserver.NodeSinkOptions{Logger: logs.logger()})
		require.NoError(t, err)

		// The status controller bounds each call (10s).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = s.UpdateNodeStatus(ctx, "n1", nodeStatus(v1.ConditionTrue))
		cancel()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "connection refused")
		assert.False(t, s.Registered())
		assert.Equal(t, []time.Duration{0, 800 * time.Millisecond, 2400 * time.Millisecond, 5600 * time.Millisecond}, attempts,
			"waits of 800ms doubling")
		warns := logs.at(slog.LevelWarn)
		require.Len(t, warns, 1)
		assert.Contains(t, warns[0], "cannot register the node: the API server does not answer")

		// The next call, the server still away for 20s: the waits reach 7s.
		attempts, begin = nil, time.Now()
		time.AfterFunc(20*time.Second, func() { server.away.Store(false) })
		require.NoError(t, s.UpdateNodeStatus(context.Background(), "n1", nodeStatus(v1.ConditionTrue)))
		assert.True(t, s.Registered())
		assert.Equal(t, []time.Duration{0, 800 * time.Millisecond, 2400 * time.Millisecond, 5600 * time.Millisecond,
			12 * time.Second, 19 * time.Second, 26 * time.Second}, attempts, "capped at 7s")
		assert.Len(t, logs.at(slog.LevelWarn), 1, "one warning for the whole outage")
		_, err = client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
		require.NoError(t, err, "registered")
	})
}

// A refusal is not retried in place: the next status update tries again.
func TestNodeSinkRegistrationRefused(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("nodes"), "n1", errors.New("no RBAC"))
	})
	s, err := apiserver.NewNodeSink(client, "n1", apiserver.NodeSinkOptions{})
	require.NoError(t, err)
	err = s.UpdateNodeStatus(t.Context(), "n1", nodeStatus(v1.ConditionTrue))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Equal(t, 1, count(client.Actions(), "create", "nodes", ""))
}

func TestNodeSinkWatch(t *testing.T) {
	// Admission sees a label others set on the Node as soon as the API
	// server has it, as upstream's kubelet sees it through its node
	// informer: upstream's cluster suite labels a node and at once creates
	// pods whose nodeSelector asks for that label.
	existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "5"}, Status: nodeStatus(v1.ConditionTrue)}
	other := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"not": "mine"}}}
	s, client := newNodeSink(t, apiserver.NodeSinkOptions{}, existing, other)
	_, err := s.Node()
	require.Error(t, err, "nothing read yet")

	runUntilEnd(t, s.Watch)
	require.Eventually(t, func() bool { _, err := s.Node(); return err == nil }, waitFor, time.Millisecond)
	n, err := s.Node()
	require.NoError(t, err)
	assert.Equal(t, "n1", n.Name, "its own Node, not another")
	require.Eventually(t, func() bool {
		for _, a := range client.Actions() {
			if w, ok := a.(k8stesting.WatchAction); ok && w.GetResource().Resource == "nodes" {
				return w.GetWatchRestrictions().Fields.String() == "metadata.name=n1"
			}
		}
		return false
	}, waitFor, time.Millisecond, "the watch selects the node by name")

	labelled := existing.DeepCopy()
	labelled.Labels = map[string]string{"kubernetes.io/e2e-9b1c": "42"}
	labelled.ResourceVersion = "7"
	_, err = client.CoreV1().Nodes().Update(t.Context(), labelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { n, _ := s.Node(); return n.Labels["kubernetes.io/e2e-9b1c"] == "42" }, waitFor, time.Millisecond)
	n, err = s.Node()
	require.NoError(t, err)
	n.Labels["changed"] = "by the caller"
	again, err := s.Node()
	require.NoError(t, err)
	assert.NotContains(t, again.Labels, "changed", "Node returns a copy")
}
