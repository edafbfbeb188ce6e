package dratest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/kubeletkit/kubeletkit/dra/dratest"
)

// A fake DRA plugin prepares a claim with the devices the test set and
// records the call.
func Example() {
	dir, _ := os.MkdirTemp("", "dra")
	defer os.RemoveAll(dir)
	p, err := dratest.Start(dratest.Options{Driver: "gpu.example.com", Endpoint: filepath.Join(dir, "gpu.sock")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Stop()
	p.SetDevices("gpu", &drav1.Device{PoolName: "node1", DeviceName: "gpu-0", CdiDeviceIds: []string{"example.com/gpu=gpu-0"}})

	conn, err := grpc.NewClient("passthrough:///"+p.Endpoint(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", p.Endpoint())
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	resp, err := drav1.NewDRAPluginClient(conn).NodePrepareResources(context.Background(), &drav1.NodePrepareResourcesRequest{
		Claims: []*drav1.Claim{{Namespace: "default", Uid: "claim-uid", Name: "gpu"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.GetClaims()["claim-uid"].GetDevices()[0].GetCdiDeviceIds())
	fmt.Println(p.Calls()[0].Method, p.Calls()[0].Claims)
	// Output:
	// [example.com/gpu=gpu-0]
	// NodePrepareResources [{default claim-uid gpu}]
}
