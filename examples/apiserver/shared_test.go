package apiserver_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

func TestNewSharedRefusesANilClient(t *testing.T) {
	_, err := apiserver.NewShared(nil, apiserver.SharedOptions{})
	require.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}

// Two nodes joined with one Shared get its services and volume sources,
// wait for its Run, and record their events through its broadcaster, each
// under its own host.
func TestSharedAdaptersServeEveryNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}}
		client := fake.NewClientset(svc, apiPod("default", "a", "ua", "n1"), apiPod("default", "b", "ub", "n2"))
		allowAll(client, "")
		shared, err := apiserver.NewShared(client, apiserver.SharedOptions{})
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(context.Background())
		var nodes sync.WaitGroup
		for _, name := range []string{"n1", "n2"} {
			j, err := apiserver.Join(client, name, apiserver.JoinOptions{Shared: shared})
			require.NoError(t, err)
			var opts agent.Options
			require.NoError(t, j.Apply(&opts))
			assert.Same(t, shared.Services(), opts.Cluster.Services)
			assert.Equal(t, shared.VolumeSources().Sources(), opts.Cluster.VolumeSources)
			nodes.Go(func() {
				err := j.Run(ctx, &fakeAgent{name: name, run: func(ctx context.Context) error {
					var got syncloop.PodUpdate
					select {
					case got = <-opts.Cluster.Updates:
					case <-ctx.Done():
						return nil
					}
					opts.Cluster.Recorder.Eventf(got.Pods[0], v1.EventTypeNormal, "Started", "Started container %s", "c")
					<-ctx.Done()
					return nil
				}})
				assert.NoError(t, err)
			})
		}
		synctest.Wait()
		// The nodes wait for the shared adapters: nothing was recorded.
		evs, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		assert.Empty(t, evs.Items)

		var sharedErr error
		var sharedDone sync.WaitGroup
		sharedDone.Go(func() { sharedErr = shared.Run(ctx) })
		synctest.Wait()
		services, err := shared.Services().ListServices()
		require.NoError(t, err)
		assert.Len(t, services, 1)
		// The events' writes, not the stored events: the bubble's time
		// stands still, so events recorded at one instant get one name.
		var hosts []string
		for _, act := range client.Actions() {
			if c, ok := act.(k8stesting.CreateAction); ok && act.GetResource().Resource == "events" {
				e := c.GetObject().(*v1.Event)
				hosts = append(hosts, e.Source.Host)
				assert.Equal(t, apiserver.EventComponent, e.Source.Component)
			}
		}
		sort.Strings(hosts)
		// The fake clientset ignores the spec.nodeName selector: each node
		// got both pods and recorded about the first.
		assert.Equal(t, []string{"n1", "n2"}, hosts)

		cancel()
		nodes.Wait()
		sharedDone.Wait()
		require.NoError(t, sharedErr)
		require.ErrorIs(t, shared.Run(context.Background()), apiserver.ErrInvalidArgument)
	})
}

// A node joined with a Shared that never runs ends when its ctx does.
func TestJoinedWithSharedEndsWithoutIt(t *testing.T) {
	client := fake.NewClientset()
	allowAll(client, "")
	shared, err := apiserver.NewShared(client, apiserver.SharedOptions{})
	require.NoError(t, err)
	j, err := apiserver.Join(client, "n1", apiserver.JoinOptions{Shared: shared})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = j.Run(ctx, &fakeAgent{name: "n1", run: func(context.Context) error { return nil }})
	require.ErrorIs(t, err, context.Canceled)
}
