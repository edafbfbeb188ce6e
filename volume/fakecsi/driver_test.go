package fakecsi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
)

var mountCap = &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}}}

func TestDriver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	staging := filepath.Join(dir, "globalmount")
	require.NoError(t, os.Mkdir(staging, 0o750))
	target := filepath.Join(dir, "mount")

	for _, tc := range []struct {
		name string
		run  func(t *testing.T, d *fakecsi.Driver)
	}{
		{"publish before stage is refused", func(t *testing.T, d *fakecsi.Driver) {
			_, err := d.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: "v", TargetPath: target, StagingTargetPath: staging, VolumeCapability: mountCap})
			assert.Equal(t, codes.FailedPrecondition, status.Code(err))
		}},
		{"stage, publish, unpublish, unstage", func(t *testing.T, d *fakecsi.Driver) {
			_, err := d.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: staging, VolumeCapability: mountCap})
			require.NoError(t, err)
			_, err = d.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: "v", TargetPath: target, StagingTargetPath: staging, VolumeCapability: mountCap})
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(target, "volume-id"))
			require.NoError(t, err)
			assert.Equal(t, "v", string(b))
			_, err = d.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: "v", StagingTargetPath: staging})
			assert.Equal(t, codes.FailedPrecondition, status.Code(err), "still published")
			_, err = d.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: target})
			require.NoError(t, err)
			_, err = os.Stat(target)
			assert.True(t, os.IsNotExist(err))
			_, err = d.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: "v", StagingTargetPath: staging})
			require.NoError(t, err)
			assert.Empty(t, d.Staged())
		}},
		{"injected failure", func(t *testing.T, d *fakecsi.Driver) {
			d.Fail(fakecsi.NodeGetCapabilities, status.Error(codes.Unavailable, "down"))
			_, err := d.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
			assert.Equal(t, codes.Unavailable, status.Code(err))
			d.Fail(fakecsi.NodeGetCapabilities, nil)
			resp, err := d.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
			require.NoError(t, err)
			assert.Len(t, resp.Capabilities, 1)
			_, err = d.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: target})
			assert.Equal(t, codes.Unimplemented, status.Code(err), "GET_VOLUME_STATS not advertised")
			assert.Equal(t, []string{fakecsi.NodeGetCapabilities, fakecsi.NodeGetCapabilities, fakecsi.NodeGetVolumeStats}, d.Methods())
		}},
		{"volume stats of a published volume", func(t *testing.T, d *fakecsi.Driver) {
			bytes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Total: 100, Used: 30, Available: 70}
			d.SetUsage("v", bytes)
			req := &csipb.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: target}
			_, err := d.NodeGetVolumeStats(ctx, req)
			assert.Equal(t, codes.NotFound, status.Code(err), "not published yet")
			_, err = d.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: staging, VolumeCapability: mountCap})
			require.NoError(t, err)
			_, err = d.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{VolumeId: "v", TargetPath: target, StagingTargetPath: staging, VolumeCapability: mountCap})
			require.NoError(t, err)
			resp, err := d.NodeGetVolumeStats(ctx, req)
			require.NoError(t, err)
			if assert.Len(t, resp.Usage, 1) {
				assert.Equal(t, int64(30), resp.Usage[0].Used)
			}
			caps, err := d.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
			require.NoError(t, err)
			assert.Equal(t, csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS, caps.Capabilities[len(caps.Capabilities)-1].GetRpc().GetType())
			last := d.Calls()[len(d.Calls())-2]
			assert.Equal(t, fakecsi.Call{Method: fakecsi.NodeGetVolumeStats, VolumeID: "v", TargetPath: target}, last)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, fakecsi.New(fakecsi.Options{StageUnstage: true, VolumeStats: tc.name == "volume stats of a published volume"}))
		})
	}
}
