package volume

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// vol_data.json), so TearDown works without the pod's spec; a staged
// persistent volume also has one beside its global mount, as upstream's
// MountDevice writes it.
const csiDataFile = "vol_data.json"

// Volume lifecycle modes, as upstream writes them in vol_data.json.
const (
	csiPersistent = "Persistent"
	csiEphemeral  = "Ephemeral"
)

// csiVolumeData is the content of csiDataFile: upstream's keys, and the
// pod's UID and the staging path, which are ours.
type csiVolumeData struct {
	Driver        string `json:"driverName"`
	VolumeHandle  string `json:"volumeHandle"`
	VolumeName    string `json:"specVolID"`
	NodeName      string `json:"nodeName,omitempty"`
	AttachmentID  string `json:"attachmentID,omitempty"`
	LifecycleMode string `json:"volumeLifecycleMode,omitempty"`
	PodUID        string `json:"podUID"`
	StagingPath   string `json:"stagingPath,omitempty"` // empty: not staged
}

// csiGlobalData is the content of the csiDataFile beside a persistent
// volume's global mount (upstream's MountDevice).
type csiGlobalData struct {
	Driver       string `json:"driverName"`
	VolumeHandle string `json:"volumeHandle"`
}

// csiPlugin is the node side of CSI, for inline (ephemeral) volumes and
// CSI persistent volumes: NodeStageVolume (when the driver has
// STAGE_UNSTAGE_VOLUME) and NodePublishVolume, and their reverse, over the
// driver's unix socket. A persistent volume is staged once on the node, at
// upstream's global mount path, whichever pods use it, and unstaged after
// the last of them is unpublished: the pods' vol_data.json files on disk
// say which volumes are still published, so the count survives a restart.
type csiPlugin struct {
	drivers  CSIDriversFunc
	root     string
	timeout  time.Duration
	secrets  SecretSource
	objects  CSIDriverSource // nil: no CSIDriver objects
	nodeName string
	mounter  Mounter
	now      func() time.Time // Measure's timestamps
	// deviceOp times an unstaging for Options.Metrics (Manager.deviceOp).
	deviceOp func(ctx context.Context, plugin string) func(error)

	// staging serializes, per staging path, a SetUp's record and stage
	// against a TearDown's count of the records and unstage.
	staging keyedMutex
	// staged holds the staging paths this process staged and has not
	// unstaged: a second pod's SetUp does not stage again, as upstream
	// mounts a device once. After a restart the first SetUp stages again
	// (NodeStageVolume is idempotent).
	stagedMu sync.Mutex
	staged   map[string]bool
}

func (p *csiPlugin) isStaged(path string) bool {
	p.stagedMu.Lock()
	defer p.stagedMu.Unlock()
	return p.staged[path]
}

func (p *csiPlugin) setStaged(path string, on bool) {
	p.stagedMu.Lock()
	defer p.stagedMu.Unlock()
	if p.staged == nil {
		p.staged = map[string]bool{}
	}
	if on {
		p.staged[path] = true
	} else {
		delete(p.staged, path)
	}
}

var (
	_ Plugin           = (*csiPlugin)(nil)
	_ PersistentPlugin = (*csiPlugin)(nil)
)

func newCSIPlugin(o Options, deviceOp func(ctx context.Context, plugin string) func(error)) *csiPlugin {
	objects, _ := o.Sources.Claims.(CSIDriverSource)
	return &csiPlugin{drivers: o.CSIDrivers, root: o.RootDir, timeout: o.CSITimeout, secrets: o.Sources.Secrets,
		objects: objects, nodeName: o.NodeName, mounter: o.Mounter, now: o.Clock.Now, deviceOp: deviceOp}
}

func (p *csiPlugin) Name() string                    { return CSIPluginName }
func (p *csiPlugin) CanSupport(spec *v1.Volume) bool { return spec.CSI != nil }

func (p *csiPlugin) CanSupportPersistent(pv *v1.PersistentVolume) bool { return pv.Spec.CSI != nil }

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

// csiAttachmentID is the name of the VolumeAttachment of a persistent
// volume on a node, as upstream names it.
func csiAttachmentID(handle, driver, node string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+node)))
}

// csiAccessMode maps a persistent volume's first access mode (ReadWriteOnce
// when it has none) to the CSI one, as upstream does: a driver with the
// SINGLE_NODE_MULTI_WRITER capability gets the single-node modes that say
// whether one or many pods write; another gets SINGLE_NODE_WRITER for both.
func csiAccessMode(modes []v1.PersistentVolumeAccessMode, multiWriter bool) csipb.VolumeCapability_AccessMode_Mode {
	mode := v1.ReadWriteOnce
	if len(modes) > 0 {
		mode = modes[0]
	}
	switch mode {
	case v1.ReadWriteOnce:
		if multiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case v1.ReadWriteOncePod:
		if multiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case v1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return csipb.VolumeCapability_AccessMode_UNKNOWN
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

// nodeCaps are the node capabilities SetUp and Measure ask about.
type nodeCaps struct {
	stage       bool // STAGE_UNSTAGE_VOLUME
	multiWriter bool // SINGLE_NODE_MULTI_WRITER
	volumeStats bool // GET_VOLUME_STATS
}

func (c *csiClient) capabilities(ctx context.Context) (nodeCaps, error) {
	var caps nodeCaps
	resp, err := c.node.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return caps, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	for _, c := range resp.GetCapabilities() {
		switch c.GetRpc().GetType() {
		case csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			caps.stage = true
		case csipb.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			caps.multiWriter = true
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			caps.volumeStats = true
		}
	}
	return caps, nil
}

// csiRequest is what SetUp asks of the driver for one volume.
type csiRequest struct {
	data          csiVolumeData
	readOnly      bool
	fsType        string
	mountFlags    []string
	modes         []v1.PersistentVolumeAccessMode // nil: an inline volume
	volCtx        map[string]string
	stageSecrets  *v1.SecretReference // a persistent volume's
	publishSecret *v1.SecretReference // in the pod's namespace for an inline volume
}

// podInfo is the volume context a driver that asks for it gets about the
// pod (upstream's podInfoOnMount keys).
func podInfo(pod *v1.Pod, ephemeral bool) map[string]string {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return map[string]string{
		CSIEphemeralKey: strconv.FormatBool(ephemeral), CSIPodNameKey: pod.Name, CSIPodNamespaceKey: pod.Namespace,
		CSIPodUIDKey: string(pod.UID), CSIServiceAccountNameKey: sa,
	}
}

// request builds the request of an inline volume, or of a persistent
// volume (which first passes the CSIDriver's checks: see attachment).
func (p *csiPlugin) request(ctx context.Context, v *Volume) (csiRequest, error) {
	if pv := v.PersistentVolume; pv != nil {
		src := pv.Spec.CSI
		r := csiRequest{
			data: csiVolumeData{Driver: src.Driver, VolumeHandle: src.VolumeHandle, VolumeName: pv.Name, NodeName: p.nodeName,
				AttachmentID: csiAttachmentID(src.VolumeHandle, src.Driver, p.nodeName), LifecycleMode: csiPersistent, PodUID: string(v.PodUID)},
			readOnly: v.ReadOnly || src.ReadOnly, fsType: src.FSType, mountFlags: pv.Spec.MountOptions,
			modes: pv.Spec.AccessModes, volCtx: maps.Clone(src.VolumeAttributes),
			stageSecrets: src.NodeStageSecretRef, publishSecret: src.NodePublishSecretRef,
		}
		if r.modes == nil {
			r.modes = []v1.PersistentVolumeAccessMode{}
		}
		if src.VolumeHandle == "" {
			return r, fmt.Errorf("%w: persistent volume %s has no CSI volumeHandle", ErrInvalidVolume, pv.Name)
		}
		withPodInfo, err := p.attachment(ctx, src.Driver, pv.Name)
		if err != nil {
			return r, err
		}
		if withPodInfo {
			if r.volCtx == nil {
				r.volCtx = map[string]string{}
			}
			maps.Copy(r.volCtx, podInfo(v.Pod, false))
		}
		return r, nil
	}
	src := v.Spec.CSI
	r := csiRequest{
		data:     csiVolumeData{Driver: src.Driver, VolumeHandle: csiVolumeHandle(string(v.PodUID), v.Name), VolumeName: v.Name, PodUID: string(v.PodUID)},
		readOnly: src.ReadOnly != nil && *src.ReadOnly,
		volCtx:   make(map[string]string, len(src.VolumeAttributes)+5),
	}
	if src.FSType != nil {
		r.fsType = *src.FSType
	}
	maps.Copy(r.volCtx, src.VolumeAttributes)
	maps.Copy(r.volCtx, podInfo(v.Pod, true))
	if ref := src.NodePublishSecretRef; ref != nil {
		r.publishSecret = &v1.SecretReference{Namespace: v.Pod.Namespace, Name: ref.Name}
	}
	return r, nil
}

// attachment reads the driver's CSIDriver (when the sources give them)
// and says whether it wants pod information; a driver that needs
// attaching (attachRequired, true when it has no CSIDriver, as upstream)
// fails with ErrNotAttached, as the node does not attach volumes.
func (p *csiPlugin) attachment(ctx context.Context, driver, pvName string) (podInfoOnMount bool, err error) {
	if p.objects == nil {
		return false, nil
	}
	d, err := p.objects.GetCSIDriver(ctx, driver)
	switch {
	case apierrors.IsNotFound(err):
		d = nil
	case err != nil:
		return false, fmt.Errorf("CSIDriver %s: %w", driver, err)
	}
	if d == nil || d.Spec.AttachRequired == nil || *d.Spec.AttachRequired {
		return false, fmt.Errorf("%w: volume %s of CSI driver %s needs attaching, which this node does not do: Volume not attached according to node status", ErrNotAttached, pvName, driver)
	}
	return d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount, nil
}

// SetUp stages (if the driver stages; a persistent volume once for the
// node) and publishes the volume at <volume dir>/mount; the driver
// creates that directory and mounts there.
func (p *csiPlugin) SetUp(ctx context.Context, v *Volume) (Mounted, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	r, err := p.request(ctx, v)
	if err != nil {
		return Mounted{}, err
	}
	driver := r.data.Driver
	c, err := p.dial(driver)
	if err != nil {
		return Mounted{}, err
	}
	defer c.conn.Close()

	caps, err := c.capabilities(ctx)
	if err != nil {
		return Mounted{}, fmt.Errorf("CSI driver %s: %w", driver, err)
	}
	mode := csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	if r.modes != nil {
		mode = csiAccessMode(r.modes, caps.multiWriter)
	}
	capability := &csipb.VolumeCapability{
		AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: r.fsType, MountFlags: r.mountFlags}},
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
	}
	publishSecrets, err := p.secretsOf(ctx, "NodePublishSecretRef", r.publishSecret)
	if err != nil {
		return Mounted{}, err
	}
	if caps.stage {
		r.data.StagingPath = csiStagingPath(p.root, driver, r.data.VolumeHandle)
	}
	if err := os.MkdirAll(v.Dir, 0o750); err != nil {
		return Mounted{}, err
	}
	if caps.stage {
		if err := p.stage(ctx, c, v.Dir, r, capability); err != nil {
			return Mounted{}, err
		}
	} else if err := writeCSIData(v.Dir, r.data); err != nil {
		// The record goes first, so a failure from here on is torn down
		// properly (unpublish, unstage) even after a restart.
		return Mounted{}, err
	}
	target := filepath.Join(v.Dir, "mount")
	_, err = c.node.NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
		VolumeId: r.data.VolumeHandle, StagingTargetPath: r.data.StagingPath, TargetPath: target,
		VolumeCapability: capability, Readonly: r.readOnly, Secrets: publishSecrets, VolumeContext: r.volCtx,
	})
	if err != nil {
		return Mounted{}, fmt.Errorf("CSI driver %s: NodePublishVolume: %w", driver, err)
	}
	return Mounted{HostPath: target, ReadOnly: r.readOnly, SELinuxRelabel: !r.readOnly && p.seLinuxLabeled(target)}, nil
}

// stage records the pod's use of the volume and stages it, under the
// staging path's lock: a TearDown of another pod then either sees the
// record and leaves the staging alone, or unstaged before it.
func (p *csiPlugin) stage(ctx context.Context, c *csiClient, dir string, r csiRequest, capability *csipb.VolumeCapability) error {
	defer p.staging.lock(r.data.StagingPath)()
	if err := writeCSIData(dir, r.data); err != nil {
		return err
	}
	if p.isStaged(r.data.StagingPath) {
		return nil
	}
	stageSecrets, err := p.secretsOf(ctx, "NodeStageSecretRef", r.stageSecrets)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.data.StagingPath, 0o750); err != nil {
		return err
	}
	if r.data.LifecycleMode == csiPersistent {
		g := csiGlobalData{Driver: r.data.Driver, VolumeHandle: r.data.VolumeHandle}
		if err := writeJSON(filepath.Dir(r.data.StagingPath), g); err != nil {
			return err
		}
	}
	_, err = c.node.NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
		VolumeId: r.data.VolumeHandle, StagingTargetPath: r.data.StagingPath, VolumeCapability: capability,
		Secrets: stageSecrets, VolumeContext: r.volCtx,
	})
	if err != nil {
		return fmt.Errorf("CSI driver %s: NodeStageVolume: %w", r.data.Driver, err)
	}
	p.setStaged(r.data.StagingPath, true)
	return nil
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

// secretsOf reads a secret for the driver; what names the reference in
// the error, as upstream's "fetching NodePublishSecretRef ns/name failed".
func (p *csiPlugin) secretsOf(ctx context.Context, what string, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	sec, err := getSecret(ctx, p.secrets, ref.Namespace, ref.Name, false)
	if err != nil {
		return nil, fmt.Errorf("fetching %s %s/%s failed: %w", what, ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(sec.Data))
	for k, b := range secretData(sec) {
		out[k] = string(b)
	}
	return out, nil
}

func writeCSIData(dir string, d csiVolumeData) error { return writeJSON(dir, d) }

// writeJSON writes v as dir's csiDataFile, atomically.
func writeJSON(dir string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, csiDataFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, csiDataFile))
}

// TearDown unpublishes the volume recorded in the volume directory, then
// unstages it if no other pod's volume directory records the same staging
// path, then removes the (now empty) directories. It never removes files
// under a target or staging path: a driver that leaves them behind makes
// TearDown fail, and the reconciler retries.
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
		defer p.staging.lock(d.StagingPath)()
		used, err := p.stagedFor(d.StagingPath, v.Dir)
		if err != nil {
			return err
		}
		if !used {
			done := p.deviceOp(ctx, CSIPluginName+":"+d.Driver)
			err := p.unstage(ctx, c, d)
			done(err)
			if err != nil {
				return err
			}
		}
	}
	if err := os.Remove(filepath.Join(v.Dir, csiDataFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return removeEmpty(target, v.Dir)
}

// unstage unstages a volume no pod uses any more and removes its global
// mount directory.
func (p *csiPlugin) unstage(ctx context.Context, c *csiClient, d csiVolumeData) error {
	if _, err := c.node.NodeUnstageVolume(ctx, &csipb.NodeUnstageVolumeRequest{VolumeId: d.VolumeHandle, StagingTargetPath: d.StagingPath}); err != nil {
		return fmt.Errorf("CSI driver %s: NodeUnstageVolume: %w", d.Driver, err)
	}
	p.setStaged(d.StagingPath, false)
	global := filepath.Dir(d.StagingPath)
	if err := os.Remove(filepath.Join(global, csiDataFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return removeEmpty(d.StagingPath, global)
}

// stagedFor reports whether a CSI volume directory other than dir records
// staging (a pod still uses the staged volume). The staging path's lock
// must be held.
func (p *csiPlugin) stagedFor(staging, dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(p.root, "pods", "*", "volumes", EscapeQualifiedName(CSIPluginName), "*", csiDataFile))
	if err != nil {
		return false, err
	}
	own := filepath.Join(dir, csiDataFile)
	for _, f := range files {
		if f == own {
			continue
		}
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		var d csiVolumeData
		if json.Unmarshal(b, &d) == nil && d.StagingPath == staging {
			return true, nil
		}
	}
	return false, nil
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

// keyedMutex is a mutex per key; the zero value is ready.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// lock locks key's mutex and returns its unlock.
func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*sync.Mutex{}
	}
	l := k.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		k.locks[key] = l
	}
	k.mu.Unlock()
	l.Lock()
	return l.Unlock
}
