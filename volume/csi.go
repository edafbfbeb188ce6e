package volume

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
)

// Volume context keys a kubelet adds for CSI drivers, as upstream.
const (
	CSIEphemeralKey          = "csi.storage.k8s.io/ephemeral"
	CSIPodNameKey            = "csi.storage.k8s.io/pod.name"
	CSIPodNamespaceKey       = "csi.storage.k8s.io/pod.namespace"
	CSIPodUIDKey             = "csi.storage.k8s.io/pod.uid"
	CSIServiceAccountNameKey = "csi.storage.k8s.io/serviceAccount.name"
)

// csiDataFile is what SetUp leaves next to the mount (upstream's
// vol_data.json), so TearDown works without the pod's spec.
const csiDataFile = "vol_data.json"

// csiVolumeData is the content of csiDataFile.
type csiVolumeData struct {
	Driver       string `json:"driverName"`
	VolumeHandle string `json:"volumeHandle"`
	VolumeName   string `json:"specVolID"`
	PodUID       string `json:"podUID"`
	StagingPath  string `json:"stagingPath,omitempty"` // empty: not staged
}

// csiPlugin is the node side of CSI for inline (ephemeral) volumes:
// NodeStageVolume (when the driver has STAGE_UNSTAGE_VOLUME) and
// NodePublishVolume, and their reverse, over the driver's unix socket.
type csiPlugin struct {
	drivers  CSIDriversFunc
	root     string
	timeout  time.Duration
	secrets  SecretSource
	nodeName string
	mounter  Mounter
}

var _ Plugin = (*csiPlugin)(nil)

func newCSIPlugin(o Options) *csiPlugin {
	return &csiPlugin{drivers: o.CSIDrivers, root: o.RootDir, timeout: o.CSITimeout, secrets: o.Sources.Secrets, nodeName: o.NodeName, mounter: o.Mounter}
}

func (p *csiPlugin) Name() string                    { return CSIPluginName }
func (p *csiPlugin) CanSupport(spec *v1.Volume) bool { return spec.CSI != nil }

// csiVolumeHandle names an inline volume as upstream does: the same for
// the same pod and volume, different for every other.
func csiVolumeHandle(uid, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(uid+volume)))
}

// csiStagingPath is upstream's layout:
// <root>/plugins/kubernetes.io/csi/<driver>/<sha256 of the handle>/globalmount.
func csiStagingPath(root, driver, handle string) string {
	return filepath.Join(root, "plugins", CSIPluginName, driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
}

// csiClient is one connection to a driver, for one operation.
type csiClient struct {
	conn *grpc.ClientConn
	node csipb.NodeClient
}

func (p *csiPlugin) dial(driver string) (*csiClient, error) {
	if driver == "" || strings.ContainsAny(driver, `/\`) || driver == "." || driver == ".." {
		return nil, fmt.Errorf("%w: CSI driver name %q", ErrInvalidVolume, driver)
	}
	var endpoint string
	ok := false
	if p.drivers != nil {
		endpoint, ok = p.drivers(driver)
	}
	if !ok {
		return nil, fmt.Errorf("driver name %s not found in the list of registered CSI drivers", driver)
	}
	return dialCSI(driver, endpoint)
}

// dialCSI connects to the CSI driver at endpoint, a unix socket's
// absolute path with or without "unix://".
func dialCSI(driver, endpoint string) (*csiClient, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("CSI driver %s: endpoint %q is not an absolute unix socket path", driver, endpoint)
	}
	conn, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}))
	if err != nil {
		return nil, fmt.Errorf("CSI driver %s: %w", driver, err)
	}
	return &csiClient{conn: conn, node: csipb.NewNodeClient(conn)}, nil
}

// stages reports whether the driver asks for NodeStageVolume.
func (c *csiClient) stages(ctx context.Context) (bool, error) {
	resp, err := c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return false, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	for _, c := range resp.GetCapabilities() {
		if c.GetRpc().GetType() == csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME {
			return true, nil
		}
	}
	return false, nil
}

// SetUp stages (if the driver stages) and publishes the volume at
// <volume dir>/mount; the driver creates that directory and mounts there.
func (p *csiPlugin) SetUp(ctx context.Context, v *Volume) (Mounted, error) {
	src := v.Spec.CSI
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	c, err := p.dial(src.Driver)
	if err != nil {
		return Mounted{}, err
	}
	defer c.conn.Close()

	secrets, err := p.publishSecrets(ctx, v)
	if err != nil {
		return Mounted{}, err
	}
	handle := csiVolumeHandle(string(v.PodUID), v.Name)
	readOnly := src.ReadOnly != nil && *src.ReadOnly
	fsType := ""
	if src.FSType != nil {
		fsType = *src.FSType
	}
	volCtx := make(map[string]string, len(src.VolumeAttributes)+5)
	for k, val := range src.VolumeAttributes {
		volCtx[k] = val
	}
	volCtx[CSIEphemeralKey] = "true"
	volCtx[CSIPodNameKey] = v.Pod.Name
	volCtx[CSIPodNamespaceKey] = v.Pod.Namespace
	volCtx[CSIPodUIDKey] = string(v.Pod.UID)
	sa := v.Pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	volCtx[CSIServiceAccountNameKey] = sa
	capability := &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}

	stage, err := c.stages(ctx)
	if err != nil {
		return Mounted{}, fmt.Errorf("CSI driver %s: %w", src.Driver, err)
	}
	data := csiVolumeData{Driver: src.Driver, VolumeHandle: handle, VolumeName: v.Name, PodUID: string(v.PodUID)}
	if stage {
		data.StagingPath = csiStagingPath(p.root, src.Driver, handle)
	}
	// The record goes first, so a failure from here on is torn down
	// properly (unpublish, unstage) even after a restart.
	if err := os.MkdirAll(v.Dir, 0o750); err != nil {
		return Mounted{}, err
	}
	if err := writeCSIData(v.Dir, data); err != nil {
		return Mounted{}, err
	}
	if stage {
		if err := os.MkdirAll(data.StagingPath, 0o750); err != nil {
			return Mounted{}, err
		}
		_, err := c.node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
			VolumeId: handle, StagingTargetPath: data.StagingPath, VolumeCapability: capability,
			Secrets: secrets, VolumeContext: volCtx,
		})
		if err != nil {
			return Mounted{}, fmt.Errorf("CSI driver %s: NodeStageVolume: %w", src.Driver, err)
		}
	}
	target := filepath.Join(v.Dir, "mount")
	_, err = c.node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
		VolumeId: handle, StagingTargetPath: data.StagingPath, TargetPath: target,
		VolumeCapability: capability, Readonly: readOnly, Secrets: secrets, VolumeContext: volCtx,
	})
	if err != nil {
		return Mounted{}, fmt.Errorf("CSI driver %s: NodePublishVolume: %w", src.Driver, err)
	}
	return Mounted{HostPath: target, ReadOnly: readOnly, SELinuxRelabel: !readOnly && p.seLinuxLabeled(target)}, nil
}

// seLinuxLabeled reports whether the filesystem a driver published at
// target carries SELinux labels, as upstream asks before it has a
// writable CSI volume relabelled; false when the Mounter cannot tell.
func (p *csiPlugin) seLinuxLabeled(target string) bool {
	s, ok := p.mounter.(SELinuxSupport)
	if !ok {
		return false
	}
	labeled, err := s.SupportsSELinux(target)
	return err == nil && labeled
}

// publishSecrets reads nodePublishSecretRef from the pod's namespace.
func (p *csiPlugin) publishSecrets(ctx context.Context, v *Volume) (map[string]string, error) {
	ref := v.Spec.CSI.NodePublishSecretRef
	if ref == nil {
		return nil, nil
	}
	sec, err := getSecret(ctx, p.secrets, v.Pod.Namespace, ref.Name, false)
	if err != nil {
		return nil, fmt.Errorf("nodePublishSecretRef: %w", err)
	}
	out := make(map[string]string, len(sec.Data))
	for k, b := range secretData(sec) {
		out[k] = string(b)
	}
	return out, nil
}

func writeCSIData(dir string, d csiVolumeData) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, csiDataFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, csiDataFile))
}

// TearDown unpublishes and unstages the volume recorded in the volume
// directory, then removes the (now empty) directories. It never removes
// files under a target or staging path: a driver that leaves them behind
// makes TearDown fail, and the reconciler retries.
func (p *csiPlugin) TearDown(ctx context.Context, v *Volume) error {
	b, err := os.ReadFile(filepath.Join(v.Dir, csiDataFile))
	if errors.Is(err, fs.ErrNotExist) {
		// Never published (or already torn down): only empty directories.
		return removeEmpty(filepath.Join(v.Dir, "mount"), v.Dir)
	}
	if err != nil {
		return err
	}
	var d csiVolumeData
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("%s: %w", csiDataFile, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	c, err := p.dial(d.Driver)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	target := filepath.Join(v.Dir, "mount")
	if _, err := c.node.NodeUnpublishVolume(ctx, &csipb.NodeUnpublishVolumeRequest{VolumeId: d.VolumeHandle, TargetPath: target}); err != nil {
		return fmt.Errorf("CSI driver %s: NodeUnpublishVolume: %w", d.Driver, err)
	}
	if d.StagingPath != "" {
		if _, err := c.node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: d.VolumeHandle, StagingTargetPath: d.StagingPath}); err != nil {
			return fmt.Errorf("CSI driver %s: NodeUnstageVolume: %w", d.Driver, err)
		}
		if err := removeEmpty(d.StagingPath, filepath.Dir(d.StagingPath)); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(v.Dir, csiDataFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return removeEmpty(target, v.Dir)
}

// removeEmpty removes each directory (in order) if it exists; one that is
// not empty is an error.
func removeEmpty(dirs ...string) error {
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", d, err)
		}
	}
	return nil
}
