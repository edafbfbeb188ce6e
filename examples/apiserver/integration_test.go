package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/status/node"
)

type fixedRuntime struct{}

func (fixedRuntime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake", RuntimeVersion: "1.0.0", RuntimeApiVersion: "v1"}, nil
}

func (fixedRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true},
	}}}, nil
}

type fixedMachine struct{}

func (fixedMachine) Capacity(context.Context) (v1.ResourceList, error) {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}, nil
}

func (fixedMachine) SystemInfo(context.Context) (v1.NodeSystemInfo, error) {
	return v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", MachineID: "m"}, nil
}

// The node controller of status/node, driven step by step, registers the
// Node, reports it Ready and renews its lease through the NodeSink.
func TestNodeControllerThroughNodeSink(t *testing.T) {
	client := fake.NewClientset()
	// The fake sets no UID: give the Node one, as the API server would.
	client.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*v1.Node).UID = "node-uid"
		return false, nil, nil
	})
	sink, err := apiserver.NewNodeSink(client, "n1", apiserver.NodeSinkOptions{Retry: fastRetry})
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := node.New(node.Options{NodeName: "n1", Sink: sink, Leases: sink, Runtime: fixedRuntime{}, Machine: fixedMachine{}, Clock: clk})
	require.NoError(t, err)
	ctx := t.Context()

	require.NoError(t, c.SyncStatus(ctx))
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n1", n.Labels[v1.LabelHostname])
	ready := conditionOf(n.Status.Conditions, v1.NodeReady)
	require.NotNil(t, ready)
	assert.Equal(t, v1.ConditionTrue, ready.Status)
	assert.Equal(t, "KubeletReady", ready.Reason)
	assert.Equal(t, resource.MustParse("4Gi"), n.Status.Capacity[v1.ResourceMemory])

	require.NoError(t, c.RenewLease(ctx))
	lease, err := client.CoordinationV1().Leases(node.DefaultLeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n1", *lease.Spec.HolderIdentity)
	assert.Equal(t, int32(40), *lease.Spec.LeaseDurationSeconds)
	require.Len(t, lease.OwnerReferences, 1)
	assert.Equal(t, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}, lease.OwnerReferences[0])

	clk.Step(10 * time.Second)
	require.NoError(t, c.RenewLease(ctx))
	lease, err = client.CoordinationV1().Leases(node.DefaultLeaseNamespace).Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, lease.Spec.RenewTime.Time.Equal(clk.Now()), "renewed at %v", lease.Spec.RenewTime)
}

func conditionOf(cs []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
