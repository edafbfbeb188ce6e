package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/volume"
)

// NodeIDAnnotation is the Node annotation in which upstream's kubelet
// keeps each registered CSI driver's node ID, a JSON object by driver.
const NodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"

// CSINodes records the node's CSI drivers on the API server as upstream's
// node info manager does (pkg/volume/csi/nodeinfomanager): the CSINode
// object named after the node, owned by its Node, one entry per driver
// (node ID, topology keys, allocatable volume count); the Node's
// NodeIDAnnotation; and the drivers' topology segments as Node labels.
// It is a volume.CSINodeInstaller: Joined.Apply gives it to the agent
// (agent.ClusterOptions.CSINodes), whose CSI registry calls it as drivers
// register and go. Ensure makes the CSINode with no drivers, as upstream's
// kubelet does once its Node exists. Safe for concurrent use.
type CSINodes struct {
	client   kubernetes.Interface
	nodeName string
}

var _ volume.CSINodeInstaller = (*CSINodes)(nil)

// NewCSINodes returns the recorder of nodeName's CSI drivers.
func NewCSINodes(client kubernetes.Interface, nodeName string) *CSINodes {
	return &CSINodes{client: client, nodeName: nodeName}
}

// InstallCSIDriver records d: its node ID in the Node's annotation and
// its topology as Node labels (a label the Node has with another value is
// upstream's "detected topology value collision" error), then its entry
// in the CSINode, made if missing.
func (c *CSINodes) InstallCSIDriver(ctx context.Context, d volume.CSIDriver) error {
	if err := c.updateNode(ctx, func(n *v1.Node) (bool, error) { return installOnNode(n, d) }); err != nil {
		return fmt.Errorf("install CSI driver %s on node %s: %w", d.Name, c.nodeName, err)
	}
	if err := c.updateCSINode(ctx, func(cn *storagev1.CSINode) bool { return installOnCSINode(cn, d) }); err != nil {
		return fmt.Errorf("install CSI driver %s in CSINode %s: %w", d.Name, c.nodeName, err)
	}
	return nil
}

// UninstallCSIDriver removes the driver's entry from the CSINode and its
// node ID from the Node's annotation; its topology labels stay, as
// upstream leaves them.
func (c *CSINodes) UninstallCSIDriver(ctx context.Context, name string) error {
	if err := c.updateCSINode(ctx, func(cn *storagev1.CSINode) bool { return uninstallFromCSINode(cn, name) }); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("uninstall CSI driver %s from CSINode %s: %w", name, c.nodeName, err)
	}
	if err := c.updateNode(ctx, func(n *v1.Node) (bool, error) { return uninstallFromNode(n, name), nil }); err != nil {
		return fmt.Errorf("uninstall CSI driver %s from node %s: %w", name, c.nodeName, err)
	}
	return nil
}

// Ensure makes the node's CSINode, with no drivers, if it does not
// exist; the Node must exist (it owns the CSINode).
func (c *CSINodes) Ensure(ctx context.Context) error {
	return c.updateCSINode(ctx, func(*storagev1.CSINode) bool { return false })
}

// EnsureLoop calls Ensure until it succeeds or ctx ends, waiting on clk
// between tries (500ms doubling to a minute): upstream's kubelet makes
// the CSINode in the background once its Node is registered.
func (c *CSINodes) EnsureLoop(ctx context.Context, clk clock.Clock) error {
	wait := 500 * time.Millisecond
	for {
		err := c.Ensure(ctx)
		if err == nil {
			return nil
		}
		t := clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		wait = min(2*wait, time.Minute)
	}
}

func (c *CSINodes) updateNode(ctx context.Context, change func(*v1.Node) (bool, error)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n = n.DeepCopy()
		changed, err := change(n)
		if err != nil || !changed {
			return err
		}
		_, err = c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// updateCSINode changes the CSINode, made first (owned by the Node) when
// missing.
func (c *CSINodes) updateCSINode(ctx context.Context, change func(*storagev1.CSINode) bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn, err := c.client.StorageV1().CSINodes().Get(ctx, c.nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			node, err := c.client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cn = &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: c.nodeName, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}}}
			change(cn)
			if cn.Spec.Drivers == nil {
				cn.Spec.Drivers = []storagev1.CSINodeDriver{}
			}
			_, err = c.client.StorageV1().CSINodes().Create(ctx, cn, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(storagev1.Resource("csinodes"), c.nodeName, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		cn = cn.DeepCopy()
		if !change(cn) {
			return nil
		}
		_, err = c.client.StorageV1().CSINodes().Update(ctx, cn, metav1.UpdateOptions{})
		return err
	})
}

// installOnNode puts d's node ID into the annotation and its topology
// into the labels; false when the Node has them already.
func installOnNode(n *v1.Node, d volume.CSIDriver) (bool, error) {
	ids := map[string]string{}
	if v := n.Annotations[NodeIDAnnotation]; v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			return false, fmt.Errorf("annotation %s: %w", NodeIDAnnotation, err)
		}
	}
	changed := false
	for k, v := range d.Topology {
		if old, ok := n.Labels[k]; ok && old != v {
			return false, fmt.Errorf("detected topology value collision: driver reported %q:%q but existing label is %q:%q", k, v, k, old)
		} else if !ok {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[k] = v
			changed = true
		}
	}
	if ids[d.Name] != d.NodeID {
		ids[d.Name] = d.NodeID
		b, err := json.Marshal(ids)
		if err != nil {
			return false, err
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[NodeIDAnnotation] = string(b)
		changed = true
	}
	return changed, nil
}

// uninstallFromNode drops name from the annotation (and the annotation
// when it is left empty).
func uninstallFromNode(n *v1.Node, name string) bool {
	v := n.Annotations[NodeIDAnnotation]
	ids := map[string]string{}
	if v == "" || json.Unmarshal([]byte(v), &ids) != nil {
		return false
	}
	if _, ok := ids[name]; !ok {
		return false
	}
	delete(ids, name)
	if len(ids) == 0 {
		delete(n.Annotations, NodeIDAnnotation)
		return true
	}
	b, _ := json.Marshal(ids)
	n.Annotations[NodeIDAnnotation] = string(b)
	return true
}

// csiNodeDriver is d's CSINode entry: its topology keys sorted, its
// volume limit as the allocatable count when it has one.
func csiNodeDriver(d volume.CSIDriver) storagev1.CSINodeDriver {
	e := storagev1.CSINodeDriver{Name: d.Name, NodeID: d.NodeID, TopologyKeys: slices.Sorted(maps.Keys(d.Topology))}
	if d.MaxVolumes > 0 {
		n := int32(min(d.MaxVolumes, int64(1<<31-1)))
		e.Allocatable = &storagev1.VolumeNodeResources{Count: &n}
	}
	return e
}

// installOnCSINode puts d's entry in, replacing one of the same name;
// false when it is there already as it would be.
func installOnCSINode(cn *storagev1.CSINode, d volume.CSIDriver) bool {
	want := csiNodeDriver(d)
	for i, e := range cn.Spec.Drivers {
		if e.Name != d.Name {
			continue
		}
		if sameCSINodeDriver(e, want) {
			return false
		}
		cn.Spec.Drivers[i] = want
		return true
	}
	cn.Spec.Drivers = append(cn.Spec.Drivers, want)
	return true
}

func sameCSINodeDriver(a, b storagev1.CSINodeDriver) bool {
	if a.Name != b.Name || a.NodeID != b.NodeID || !slices.Equal(a.TopologyKeys, b.TopologyKeys) {
		return false
	}
	ac, bc := a.Allocatable != nil && a.Allocatable.Count != nil, b.Allocatable != nil && b.Allocatable.Count != nil
	return ac == bc && (!ac || *a.Allocatable.Count == *b.Allocatable.Count)
}

// uninstallFromCSINode drops name's entry.
func uninstallFromCSINode(cn *storagev1.CSINode, name string) bool {
	n := len(cn.Spec.Drivers)
	cn.Spec.Drivers = slices.DeleteFunc(cn.Spec.Drivers, func(e storagev1.CSINodeDriver) bool { return e.Name == name })
	return len(cn.Spec.Drivers) != n
}
