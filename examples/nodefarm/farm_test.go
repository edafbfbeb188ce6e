package nodefarm_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/examples/nodefarm"
)

// allowAll answers every access review with allowed.
func allowAll(client *fake.Clientset) {
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = true
		return true, r, nil
	})
}

func TestNewRefusesBadOptions(t *testing.T) {
	client := fake.NewClientset()
	for _, o := range []nodefarm.Options{
		{Nodes: 0, RootDir: t.TempDir()},
		{Nodes: 1},
		{Nodes: 1, RootDir: t.TempDir(), Script: func(int) nodefarm.Script { return nodefarm.Script{CrashRatio: 2} }},
	} {
		_, err := nodefarm.New(client, o)
		assert.ErrorIs(t, err, nodefarm.ErrInvalidOptions, "%+v", o)
	}
	_, err := nodefarm.New(nil, nodefarm.Options{Nodes: 1, RootDir: t.TempDir()})
	assert.Error(t, err)
}

// Three nodes of one farm register their Nodes, Ready with the farm's
// machine, and renew a Lease each.
func TestFarmNodesJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		allowAll(client)
		f, err := nodefarm.New(client, nodefarm.Options{Nodes: 3, NamePrefix: "n-", RootDir: t.TempDir(),
			Agent: func(i int, o *agent.Options) {
				o.Node.HostIPs = []string{"192.0.2.10"}
				o.Eviction.Stats = &evictiontest.Stats{}
				o.Rand = func() float64 { return 0 }
			}})
		require.NoError(t, err)
		var names []string
		for _, n := range f.Nodes() {
			names = append(names, n.Name)
		}
		assert.Equal(t, []string{"n-0000", "n-0001", "n-0002"}, names)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		time.Sleep(30 * time.Second) // the bubble's time: node status every 10s
		synctest.Wait()

		for _, name := range names {
			nd, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
			require.NoError(t, err, name)
			assert.Equal(t, "110", nd.Status.Capacity.Pods().String())
			var ready v1.ConditionStatus
			for _, c := range nd.Status.Conditions {
				if c.Type == v1.NodeReady {
					ready = c.Status
				}
			}
			assert.Equal(t, v1.ConditionTrue, ready, name)
			lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), name, metav1.GetOptions{})
			require.NoError(t, err, name)
			assert.Equal(t, name, *lease.Spec.HolderIdentity)
		}
		cancel()
		require.NoError(t, <-done)
	})
}
