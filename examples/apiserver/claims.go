package apiserver

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeletkit/kubeletkit/volume"
)

// Claims reads PersistentVolumeClaims, PersistentVolumes and CSIDrivers
// from the API server, one GET each time the volume block resolves a
// pod's claim, as upstream's desired state populator does: the Claims of
// volume.Sources (WatchingSources, VolumeSources and KeptSources give it,
// so Joined.Apply sets it). Errors are the API server's (NotFound for an
// object that does not exist). The Node authorizer lets a node read only
// the claims of pods bound to it and the volumes bound to those.
type Claims struct {
	client kubernetes.Interface
}

var (
	_ volume.ClaimSource     = (*Claims)(nil)
	_ volume.CSIDriverSource = (*Claims)(nil)
)

// NewClaims returns the claims of client's API server.
func NewClaims(client kubernetes.Interface) *Claims { return &Claims{client: client} }

// GetPersistentVolumeClaim returns the claim.
func (c *Claims) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return c.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetPersistentVolume returns the persistent volume.
func (c *Claims) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	return c.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// GetCSIDriver returns the CSIDriver (storage.k8s.io/v1).
func (c *Claims) GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	return c.client.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
}
