package fakecsi_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
)

// The driver is served on a unix socket in a temporary directory and driven
// through a CSI gRPC client, as the volume block's CSI plugin drives a real
// node driver: ask for its capabilities, stage and publish a volume, read
// what the driver left in the target directory, then tear it all down.
func Example() {
	// Keep the socket path short: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", StageUnstage: true})
	l, err := net.Listen("unix", filepath.Join(dir, "csi.sock"))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx, l) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			panic(err)
		}
	}()

	conn, err := grpc.NewClient("unix://"+l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	identity, node := csipb.NewIdentityClient(conn), csipb.NewNodeClient(conn)

	info, err := identity.GetPluginInfo(ctx, &csipb.GetPluginInfoRequest{})
	if err != nil {
		panic(err)
	}
	fmt.Println("driver:", info.GetName())
	caps, err := node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		panic(err)
	}
	for _, c := range caps.GetCapabilities() {
		fmt.Println("capability:", c.GetRpc().GetType())
	}

	mount := &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4"}}}
	staging := filepath.Join(dir, "globalmount")
	target := filepath.Join(dir, "mount")
	if err := os.Mkdir(staging, 0o750); err != nil {
		panic(err)
	}
	if _, err := node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging, VolumeCapability: mount}); err != nil {
		panic(err)
	}
	if _, err := node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging, TargetPath: target, VolumeCapability: mount}); err != nil {
		panic(err)
	}
	b, err := os.ReadFile(filepath.Join(target, "volume-id"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("target holds volume-id %q\n", b)

	if _, err := node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: "vol-1", TargetPath: target}); err != nil {
		panic(err)
	}
	if _, err := node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: "vol-1", StagingTargetPath: staging}); err != nil {
		panic(err)
	}
	_, err = os.Stat(target)
	fmt.Println("target removed:", os.IsNotExist(err))
	for _, m := range d.Methods() {
		fmt.Println("call:", m)
	}
	// Output:
	// driver: csi.example.com
	// capability: STAGE_UNSTAGE_VOLUME
	// target holds volume-id "vol-1"
	// target removed: true
	// call: GetPluginInfo
	// call: NodeGetCapabilities
	// call: NodeStageVolume
	// call: NodePublishVolume
	// call: NodeUnpublishVolume
	// call: NodeUnstageVolume
}
