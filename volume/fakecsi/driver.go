package fakecsi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Methods, as recorded in Call.Method and keyed in Fail.
const (
	GetPluginInfo       = "GetPluginInfo"
	Probe               = "Probe"
	GetPluginCaps       = "GetPluginCapabilities"
	NodeGetCapabilities = "NodeGetCapabilities"
	NodeGetInfo         = "NodeGetInfo"
	NodeStageVolume     = "NodeStageVolume"
	NodeUnstageVolume   = "NodeUnstageVolume"
	NodePublishVolume   = "NodePublishVolume"
	NodeUnpublishVolume = "NodeUnpublishVolume"
	NodeGetVolumeStats  = "NodeGetVolumeStats"
)

// Options configures a Driver.
type Options struct {
	// Name is the driver's name (empty: "fake.csi.kubeletkit.io").
	Name string
	// NodeID is returned by NodeGetInfo (empty: "fake-node").
	NodeID string
	// StageUnstage advertises STAGE_UNSTAGE_VOLUME.
	StageUnstage bool
	// SingleNodeMultiWriter advertises SINGLE_NODE_MULTI_WRITER (the
	// access modes SINGLE_NODE_SINGLE_WRITER and SINGLE_NODE_MULTI_WRITER).
	SingleNodeMultiWriter bool
	// VolumeStats advertises GET_VOLUME_STATS: NodeGetVolumeStats answers
	// what SetUsage scripted for a published volume. Without it,
	// NodeGetVolumeStats is Unimplemented.
	VolumeStats bool
}

// Call is one recorded call.
type Call struct {
	Method        string
	VolumeID      string
	TargetPath    string
	StagingPath   string
	ReadOnly      bool
	FSType        string
	VolumeContext map[string]string
	Secrets       map[string]string
	// AccessMode and MountFlags are the volume capability's (stage and
	// publish).
	AccessMode csipb.VolumeCapability_AccessMode_Mode
	MountFlags []string
}

// Driver is the fake driver.
type Driver struct {
	csipb.UnimplementedIdentityServer
	csipb.UnimplementedNodeServer

	opts Options

	mu        sync.Mutex
	calls     []Call
	fail      map[string]error
	staged    map[string]string // volume ID → staging path
	published map[string]string // target path → volume ID
	usage     map[string][]*csipb.VolumeUsage
}

var (
	_ csipb.IdentityServer = (*Driver)(nil)
	_ csipb.NodeServer     = (*Driver)(nil)
)

// New returns a Driver.
func New(opts Options) *Driver {
	if opts.Name == "" {
		opts.Name = "fake.csi.kubeletkit.io"
	}
	if opts.NodeID == "" {
		opts.NodeID = "fake-node"
	}
	return &Driver{opts: opts, fail: map[string]error{}, staged: map[string]string{}, published: map[string]string{},
		usage: map[string][]*csipb.VolumeUsage{}}
}

// Name is the driver's name.
func (d *Driver) Name() string { return d.opts.Name }

// Serve serves the driver on l until ctx ends, then stops the server and
// returns nil (or the server's error if it failed first).
func (d *Driver) Serve(ctx context.Context, l net.Listener) error {
	srv := grpc.NewServer()
	csipb.RegisterIdentityServer(srv, d)
	csipb.RegisterNodeServer(srv, d)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		<-errc
		return nil
	case err := <-errc:
		return err
	}
}

// Fail makes method return err (nil: succeed again); a gRPC status error
// keeps its code.
func (d *Driver) Fail(method string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err == nil {
		delete(d.fail, method)
		return
	}
	d.fail[method] = err
}

// Calls returns the recorded calls, oldest first.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call(nil), d.calls...)
}

// Methods returns the recorded calls' methods, oldest first.
func (d *Driver) Methods() []string {
	var out []string
	for _, c := range d.Calls() {
		out = append(out, c.Method)
	}
	return out
}

// Staged returns the staged volumes, ID → staging path.
func (d *Driver) Staged() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.staged)
}

// Published returns the published volumes, target path → ID.
func (d *Driver) Published() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.published)
}

// record records c and returns the injected error of its method. d.mu
// must be held.
func (d *Driver) record(c Call) error {
	d.calls = append(d.calls, c)
	return d.fail[c.Method]
}

// GetPluginInfo returns the name.
func (d *Driver) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: GetPluginInfo}); err != nil {
		return nil, err
	}
	return &csipb.GetPluginInfoResponse{Name: d.opts.Name, VendorVersion: "0.0.1"}, nil
}

// GetPluginCapabilities returns none: a node-only plugin.
func (d *Driver) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: GetPluginCaps}); err != nil {
		return nil, err
	}
	return &csipb.GetPluginCapabilitiesResponse{}, nil
}

// Probe reports ready.
func (d *Driver) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: Probe}); err != nil {
		return nil, err
	}
	return &csipb.ProbeResponse{}, nil
}

// SetUsage scripts what NodeGetVolumeStats answers for the volume from
// now on: usage as given (none: an answer without usage).
func (d *Driver) SetUsage(volumeID string, usage ...*csipb.VolumeUsage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.usage[volumeID] = usage
}

// NodeGetCapabilities advertises STAGE_UNSTAGE_VOLUME,
// SINGLE_NODE_MULTI_WRITER and GET_VOLUME_STATS as configured.
func (d *Driver) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest) (*csipb.NodeGetCapabilitiesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: NodeGetCapabilities}); err != nil {
		return nil, err
	}
	resp := &csipb.NodeGetCapabilitiesResponse{}
	if d.opts.StageUnstage {
		resp.Capabilities = append(resp.Capabilities, rpcCapability(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME))
	}
	if d.opts.SingleNodeMultiWriter {
		resp.Capabilities = append(resp.Capabilities, rpcCapability(csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER))
	}
	if d.opts.VolumeStats {
		resp.Capabilities = append(resp.Capabilities, rpcCapability(csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS))
	}
	return resp, nil
}

// NodeGetInfo returns the node ID.
func (d *Driver) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: NodeGetInfo}); err != nil {
		return nil, err
	}
	return &csipb.NodeGetInfoResponse{NodeId: d.opts.NodeID}, nil
}

func rpcCapability(t csipb.NodeServiceCapability_RPC_Type) *csipb.NodeServiceCapability {
	return &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}}
}

func fsType(c *csipb.VolumeCapability) string { return c.GetMount().GetFsType() }

// NodeStageVolume records the staging path, which must be a directory.
func (d *Driver) NodeStageVolume(_ context.Context, req *csipb.NodeStageVolumeRequest) (*csipb.NodeStageVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: NodeStageVolume, VolumeID: req.VolumeId, StagingPath: req.StagingTargetPath,
		FSType: fsType(req.VolumeCapability), VolumeContext: req.VolumeContext, Secrets: req.Secrets,
		AccessMode: req.VolumeCapability.GetAccessMode().GetMode(), MountFlags: req.VolumeCapability.GetMount().GetMountFlags()}); err != nil {
		return nil, err
	}
	if !d.opts.StageUnstage {
		return nil, status.Error(codes.Unimplemented, "NodeStageVolume is not advertised")
	}
	if req.VolumeId == "" || req.StagingTargetPath == "" || req.VolumeCapability == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, staging path and capability are required")
	}
	if fi, err := os.Stat(req.StagingTargetPath); err != nil || !fi.IsDir() {
		return nil, status.Errorf(codes.InvalidArgument, "staging path %s is not a directory", req.StagingTargetPath)
	}
	if p, ok := d.staged[req.VolumeId]; ok && p != req.StagingTargetPath {
		return nil, status.Errorf(codes.AlreadyExists, "volume %s is staged at %s", req.VolumeId, p)
	}
	d.staged[req.VolumeId] = req.StagingTargetPath
	return &csipb.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume forgets the staging; unknown volumes succeed.
func (d *Driver) NodeUnstageVolume(_ context.Context, req *csipb.NodeUnstageVolumeRequest) (*csipb.NodeUnstageVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: NodeUnstageVolume, VolumeID: req.VolumeId, StagingPath: req.StagingTargetPath}); err != nil {
		return nil, err
	}
	for target, id := range d.published {
		if id == req.VolumeId {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published at %s", id, target)
		}
	}
	delete(d.staged, req.VolumeId)
	return &csipb.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume creates the target with a file "volume-id".
func (d *Driver) NodePublishVolume(_ context.Context, req *csipb.NodePublishVolumeRequest) (*csipb.NodePublishVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: NodePublishVolume, VolumeID: req.VolumeId, TargetPath: req.TargetPath, StagingPath: req.StagingTargetPath,
		ReadOnly: req.Readonly, FSType: fsType(req.VolumeCapability), VolumeContext: req.VolumeContext, Secrets: req.Secrets,
		AccessMode: req.VolumeCapability.GetAccessMode().GetMode(), MountFlags: req.VolumeCapability.GetMount().GetMountFlags()}); err != nil {
		return nil, err
	}
	if req.VolumeId == "" || req.TargetPath == "" || req.VolumeCapability == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, target path and capability are required")
	}
	if d.opts.StageUnstage && d.staged[req.VolumeId] != req.StagingTargetPath {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %q", req.VolumeId, req.StagingTargetPath)
	}
	if fi, err := os.Stat(filepath.Dir(req.TargetPath)); err != nil || !fi.IsDir() {
		return nil, status.Errorf(codes.InvalidArgument, "the parent of target path %s does not exist", req.TargetPath)
	}
	if id, ok := d.published[req.TargetPath]; ok {
		if id != req.VolumeId {
			return nil, status.Errorf(codes.AlreadyExists, "target %s holds volume %s", req.TargetPath, id)
		}
		return &csipb.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(req.TargetPath, 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.WriteFile(filepath.Join(req.TargetPath, "volume-id"), []byte(req.VolumeId), 0o644); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	d.published[req.TargetPath] = req.VolumeId
	return &csipb.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume removes the target; unknown targets succeed.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csipb.NodeUnpublishVolumeRequest) (*csipb.NodeUnpublishVolumeResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: NodeUnpublishVolume, VolumeID: req.VolumeId, TargetPath: req.TargetPath}); err != nil {
		return nil, err
	}
	if _, ok := d.published[req.TargetPath]; ok {
		if err := os.RemoveAll(req.TargetPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, status.Error(codes.Internal, err.Error())
		}
		delete(d.published, req.TargetPath)
	}
	return &csipb.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats answers the usage SetUsage scripted for a volume
// published (or staged) at the volume path; Unimplemented without
// Options.VolumeStats, NotFound for a volume not there. The call records
// the volume path as TargetPath and the staging_target_path as
// StagingPath.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *csipb.NodeGetVolumeStatsRequest) (*csipb.NodeGetVolumeStatsResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.record(Call{Method: NodeGetVolumeStats, VolumeID: req.VolumeId, TargetPath: req.VolumePath, StagingPath: req.StagingTargetPath}); err != nil {
		return nil, err
	}
	if !d.opts.VolumeStats {
		return nil, status.Error(codes.Unimplemented, "NodeGetVolumeStats is not advertised")
	}
	if req.VolumeId == "" || req.VolumePath == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and volume path are required")
	}
	if d.published[req.VolumePath] != req.VolumeId && d.staged[req.VolumeId] != req.VolumePath {
		return nil, status.Errorf(codes.NotFound, "volume %s is not at %s", req.VolumeId, req.VolumePath)
	}
	return &csipb.NodeGetVolumeStatsResponse{Usage: d.usage[req.VolumeId]}, nil
}

// String describes a call for test output.
func (c Call) String() string { return fmt.Sprintf("%s %s", c.Method, c.VolumeID) }
