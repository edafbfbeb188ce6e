package devicestest_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kubeletkit/kubeletkit/devices/devicestest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPluginListsUpdatesAndBreaks(t *testing.T) {
	dir, err := os.MkdirTemp("", "kkdp")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	p := devicestest.New("example.com/gpu", devicestest.Healthy("0")...)
	require.NoError(t, p.Start(dir, "p.sock"))
	defer p.Stop()
	conn, err := grpc.NewClient("unix://"+dir+"/p.sock", grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := pluginapi.NewDevicePluginClient(conn)
	stream, err := client.ListAndWatch(ctx, &pluginapi.Empty{})
	require.NoError(t, err)
	resp, err := stream.Recv()
	require.NoError(t, err)
	assert.Equal(t, "0", resp.GetDevices()[0].GetID())

	p.SetDevices(devicestest.Unhealthy("0")...)
	resp, err = stream.Recv()
	require.NoError(t, err)
	assert.Equal(t, pluginapi.Unhealthy, resp.GetDevices()[0].GetHealth())

	p.Break(errors.New("gone"))
	_, err = stream.Recv()
	assert.Equal(t, "gone", status.Convert(err).Message())

	alloc, err := client.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0"}}}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{devicestest.DefaultEnv: "0"}, alloc.GetContainerResponses()[0].GetEnvs())
	assert.Equal(t, []string{devicestest.ListAndWatch, devicestest.Allocate}, p.Calls())
}
