package dratest_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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
