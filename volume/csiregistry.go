package volume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// CSIRegistry is the node's registry of CSI drivers, as upstream's CSI
// plugin keeps it: drivers register through the plugin registry
// (package pluginmanager, plugin type CSIPlugin, which a driver's
// node-driver-registrar announces), and CSI volumes reach a driver by
// name (Lookup, a CSIDriversFunc). It has pluginmanager's Handler
// methods. Safe for concurrent use.
type CSIRegistry struct {
	installer CSINodeInstaller

	mu      sync.Mutex
	drivers map[string]CSIDriver
}

// CSIDriver is a registered CSI driver.
type CSIDriver struct {
	// Name is the driver's name; Endpoint its node service's socket.
	Name, Endpoint string
	// Version is the highest CSI version it and the node both support.
	Version string
	// NodeID, MaxVolumes and Topology are its NodeGetInfo answer: the
	// node's ID for the driver, how many of its volumes the node may
	// have (0: no limit) and the node's accessible topology.
	NodeID     string
	MaxVolumes int64
	Topology   map[string]string
}

// CSINodeInstaller records a driver on the node's objects when it
// registers and forgets it when it goes: upstream's node info manager
// writes the Node's csi.volume.kubernetes.io/nodeid annotation, its
// topology labels and the CSINode object. An API-server seam implements
// it; without one, drivers register on the node alone.
type CSINodeInstaller interface {
	InstallCSIDriver(ctx context.Context, d CSIDriver) error
	UninstallCSIDriver(ctx context.Context, name string) error
}

// NewCSIRegistry returns an empty registry; installer may be nil.
func NewCSIRegistry(installer CSINodeInstaller) *CSIRegistry {
	return &CSIRegistry{installer: installer, drivers: map[string]CSIDriver{}}
}

// csiLog is the prefix upstream's CSI plugin gives its messages.
const csiLog = "kubernetes.io/csi: "

// ValidatePlugin accepts a driver that supports a CSI version the node
// supports (1.x) and that no driver of the same name with a higher
// version has registered, with upstream's messages.
func (r *CSIRegistry) ValidatePlugin(name, endpoint string, versions []string) error {
	_, err := r.validate("ValidatePlugin", name, versions)
	return err
}

func (r *CSIRegistry) validate(caller, name string, versions []string) (string, error) {
	v, err := highestCSIVersion(versions)
	if err != nil {
		return "", fmt.Errorf(csiLog+"%s for CSI driver %q failed. None of the versions specified %q are supported. err=%w", caller, name, versions, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.drivers[name]; ok && !versionLess(old.Version, v) {
		return "", fmt.Errorf(csiLog+"%s for CSI driver %q failed. Another driver with the same name is already registered with a higher supported version: %q", caller, name, old.Version)
	}
	return v, nil
}

// RegisterPlugin records the driver, asks it NodeGetInfo and has the
// installer record it; when either fails, the driver is forgotten again
// and the error returned, as upstream's.
func (r *CSIRegistry) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string) error {
	v, err := r.validate("RegisterPlugin", name, versions)
	if err != nil {
		return err
	}
	d := CSIDriver{Name: name, Endpoint: endpoint, Version: v}
	r.mu.Lock()
	r.drivers[name] = d
	r.mu.Unlock()
	if err := r.nodeInfo(ctx, &d); err != nil {
		r.forget(name, endpoint)
		return fmt.Errorf(csiLog+"registrationHandler.RegisterPlugin failed at CSI.NodeGetInfo: %w", err)
	}
	r.mu.Lock()
	r.drivers[name] = d
	r.mu.Unlock()
	if r.installer != nil {
		if err := r.installer.InstallCSIDriver(ctx, d); err != nil {
			r.forget(name, endpoint)
			return fmt.Errorf(csiLog+"registrationHandler.RegisterPlugin failed at AddNodeInfo: %w", err)
		}
	}
	return nil
}

func (r *CSIRegistry) nodeInfo(ctx context.Context, d *CSIDriver) error {
	c, err := dialCSI(d.Name, d.Endpoint)
	if err != nil {
		return err
	}
	defer c.conn.Close()
	resp, err := c.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
	if err != nil {
		return err
	}
	if resp.GetNodeId() == "" {
		return errors.New("node ID is empty")
	}
	if resp.GetMaxVolumesPerNode() < 0 {
		return errors.New("maxVolumesPerNode is invalid")
	}
	d.NodeID, d.MaxVolumes = resp.GetNodeId(), resp.GetMaxVolumesPerNode()
	d.Topology = resp.GetAccessibleTopology().GetSegments()
	return nil
}

// DeRegisterPlugin forgets the driver registered at endpoint and has the
// installer forget it; a driver since registered at another endpoint (a
// restarted driver's new socket) stays.
func (r *CSIRegistry) DeRegisterPlugin(name, endpoint string) {
	if r.forget(name, endpoint) && r.installer != nil {
		_ = r.installer.UninstallCSIDriver(context.Background(), name)
	}
}

func (r *CSIRegistry) forget(name, endpoint string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.drivers[name]; ok && d.Endpoint == endpoint {
		delete(r.drivers, name)
		return true
	}
	return false
}

// Lookup finds a registered driver's endpoint by name; it is a
// CSIDriversFunc.
func (r *CSIRegistry) Lookup(name string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.drivers[name]
	return d.Endpoint, ok
}

// Drivers returns the registered drivers, by name.
func (r *CSIRegistry) Drivers() []CSIDriver {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]CSIDriver, 0, len(r.drivers))
	for _, d := range r.drivers {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b CSIDriver) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// highestCSIVersion is the highest of versions ("1.2.0", "v1.0.0", "1.0")
// whose major version the node supports, 1; upstream's
// HighestSupportedVersion.
func highestCSIVersion(versions []string) (string, error) {
	if len(versions) == 0 {
		return "", errors.New("CSI driver reporting empty array for supported versions")
	}
	best := ""
	for _, v := range versions {
		parts, ok := parseVersion(v)
		if !ok || parts[0] != 1 {
			continue
		}
		if best == "" || versionLess(best, v) {
			best = v
		}
	}
	if best == "" {
		return "", errors.New("none of the CSI versions reported by this driver are supported")
	}
	return best, nil
}

// parseVersion reads "v1", "1.2" or "1.2.3" (an optional v, up to three
// numbers).
func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	fields := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(fields) == 0 || len(fields) > 3 {
		return out, false
	}
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// versionLess reports whether version a is below b; unparsable ones are
// the lowest.
func versionLess(a, b string) bool {
	pa, oka := parseVersion(a)
	pb, okb := parseVersion(b)
	if !oka || !okb {
		return !oka && okb
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}
