package dratest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/kubeletkit/kubeletkit/dra/dratest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The plugin answers both versions from the same state and records which
// one each call came through.
func TestPlugin(t *testing.T) {
	p, err := dratest.Start(dratest.Options{Driver: "gpu.example.com", Endpoint: filepath.Join(dratest.SocketDir(t), "dra.sock")})
	require.NoError(t, err)
	defer p.Stop()
	p.SetDevices("gpu", &drav1.Device{PoolName: "pool", DeviceName: "gpu-0", CdiDeviceIds: []string{"gpu.example.com/gpu=0"}})
	conn, err := grpc.NewClient("unix://"+p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx := context.Background()
	claims := []*drav1beta1.Claim{{Namespace: "ns", Uid: "uid", Name: "gpu"}}

	resp, err := drav1beta1.NewDRAPluginClient(conn).NodePrepareResources(ctx, &drav1beta1.NodePrepareResourcesRequest{Claims: claims})
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu.example.com/gpu=0"}, resp.GetClaims()["uid"].GetDevices()[0].GetCdiDeviceIds())
	assert.Equal(t, []string{"uid"}, p.Prepared())

	p.Fail(dratest.NodeUnprepareResources, errors.New("down"))
	_, err = drav1.NewDRAPluginClient(conn).NodeUnprepareResources(ctx, &drav1.NodeUnprepareResourcesRequest{Claims: []*drav1.Claim{{Namespace: "ns", Uid: "uid", Name: "gpu"}}})
	assert.ErrorContains(t, err, "down")
	assert.Equal(t, []dratest.Call{
		{Method: dratest.NodePrepareResources, Service: drav1beta1.DRAPluginService, Claims: []dratest.Claim{{Namespace: "ns", UID: "uid", Name: "gpu"}}},
		{Method: dratest.NodeUnprepareResources, Service: drav1.DRAPluginService, Claims: []dratest.Claim{{Namespace: "ns", UID: "uid", Name: "gpu"}}},
	}, p.Calls())
}

// An in-memory plugin in a synctest bubble: a connection from Dial keeps
// the health stream open, which sends the health set before it opened and
// each one set after; no socket is made.
func TestInMemoryPluginStreamsHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := dratest.Start(dratest.Options{Driver: "gpu.example.com", Endpoint: "/nowhere/dra.sock", Health: true, InMemory: true})
		require.NoError(t, err)
		defer p.Stop()
		dev := &drahealthv1alpha1.DeviceIdentifier{PoolName: "pool", DeviceName: "gpu-0"}
		p.SetHealth(&drahealthv1alpha1.DeviceHealth{Device: dev, Health: drahealthv1alpha1.HealthStatus_HEALTHY})
		conn, err := grpc.NewClient("passthrough:///gpu", grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return dratest.Dialer(p)(ctx, "/nowhere/dra.sock")
			}))
		require.NoError(t, err)
		defer conn.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stream, err := drahealthv1alpha1.NewDRAResourceHealthClient(conn).NodeWatchResources(ctx, &drahealthv1alpha1.NodeWatchResourcesRequest{})
		require.NoError(t, err)
		resp, err := stream.Recv()
		require.NoError(t, err)
		assert.Equal(t, drahealthv1alpha1.HealthStatus_HEALTHY, resp.GetDevices()[0].GetHealth())
		synctest.Wait()
		assert.Equal(t, 1, p.Watchers())

		p.SetHealth(&drahealthv1alpha1.DeviceHealth{Device: dev, Health: drahealthv1alpha1.HealthStatus_UNHEALTHY, Message: "hot"})
		resp, err = stream.Recv()
		require.NoError(t, err)
		assert.Equal(t, "hot", resp.GetDevices()[0].GetMessage())
		_, err = os.Stat("/nowhere/dra.sock")
		assert.True(t, os.IsNotExist(err))
		_, err = dratest.Dialer(p)(ctx, "/elsewhere.sock")
		assert.EqualError(t, err, "dratest: no plugin at /elsewhere.sock")
	})
}
