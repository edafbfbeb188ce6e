package apiserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// TestClaims: claims, persistent volumes and CSIDrivers are read from the
// API server; a missing one is NotFound; every volume source hands them
// over as Claims.
func TestClaims(t *testing.T) {
	client := fake.NewClientset(
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}},
		&v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"}},
	)
	c := apiserver.NewClaims(client)
	claim, err := c.GetPersistentVolumeClaim(t.Context(), "ns", "data")
	require.NoError(t, err)
	assert.Equal(t, "pv-1", claim.Spec.VolumeName)
	_, err = c.GetPersistentVolumeClaim(t.Context(), "other", "data")
	assert.True(t, apierrors.IsNotFound(err), err)
	pv, err := c.GetPersistentVolume(t.Context(), "pv-1")
	require.NoError(t, err)
	assert.Equal(t, "pv-1", pv.Name)
	_, err = c.GetPersistentVolume(t.Context(), "pv-2")
	assert.True(t, apierrors.IsNotFound(err), err)
	d, err := c.GetCSIDriver(t.Context(), "csi.example.com")
	require.NoError(t, err)
	assert.Equal(t, "csi.example.com", d.Name)

	ws, err := apiserver.NewWatchingSources(client, apiserver.WatchingSourcesOptions{})
	require.NoError(t, err)
	assert.NotNil(t, ws.Sources().Claims)
	vs, err := apiserver.NewVolumeSources(client, apiserver.VolumeSourcesOptions{})
	require.NoError(t, err)
	assert.NotNil(t, vs.Sources().Claims)
}
