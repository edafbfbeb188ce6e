package volume

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// boundVolume is what a pod's persistentVolumeClaim or ephemeral volume
// resolves to: the claim, the persistent volume bound to it, and whether
// the pod mounts it read-only (the claim source's readOnly; an ephemeral
// volume's is false, as upstream).
type boundVolume struct {
	claim    *v1.PersistentVolumeClaim
	pv       *v1.PersistentVolume
	readOnly bool
}

// ClaimName is the claim a pod's volume names: a persistentVolumeClaim's
// claimName, or for a generic ephemeral volume the claim the ephemeral
// volume controller makes for it, "<pod name>-<volume name>", as upstream.
// ok is false for any other volume.
func ClaimName(pod *v1.Pod, vol *v1.Volume) (name string, ok bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, true
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name, true
	}
	return "", false
}

// resolveClaim finds the persistent volume behind one of pod's claim
// volumes with upstream's checks and messages (the desired state
// populator's createVolumeSpec): the claim must exist, not be being
// deleted, be Bound with a volume name; an ephemeral volume's claim must be
// controlled by the pod; the volume must exist and its claimRef must name
// the claim's UID; a Block volume cannot be in volumeMounts, nor a
// Filesystem one in volumeDevices.
func resolveClaim(ctx context.Context, src ClaimSource, pod *v1.Pod, vol *v1.Volume) (boundVolume, error) {
	claimName, _ := ClaimName(pod, vol)
	failed := func(err error) (boundVolume, error) {
		return boundVolume{}, fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claimName, err)
	}
	if src == nil {
		return failed(fmt.Errorf("%w for claims", ErrNoSource))
	}
	claim, err := src.GetPersistentVolumeClaim(ctx, pod.Namespace, claimName)
	if err != nil {
		return failed(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	}
	switch {
	case claim.DeletionTimestamp != nil:
		return failed(errors.New("PVC is being deleted"))
	case claim.Status.Phase != v1.ClaimBound:
		return failed(errors.New("PVC is not bound"))
	case claim.Spec.VolumeName == "":
		return failed(errors.New("PVC has empty pvc.Spec.VolumeName"))
	}
	readOnly := false
	if vol.PersistentVolumeClaim != nil {
		readOnly = vol.PersistentVolumeClaim.ReadOnly
	} else if claim.Namespace != pod.Namespace || !metav1.IsControlledBy(claim, pod) {
		return boundVolume{}, fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	pvName := claim.Spec.VolumeName
	pv, err := src.GetPersistentVolume(ctx, pvName)
	if err != nil {
		return failed(fmt.Errorf("failed to fetch PV %s from API server: %w", pvName, err))
	}
	if pv.Spec.ClaimRef == nil {
		return failed(fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pvName))
	}
	if pv.Spec.ClaimRef.UID != claim.UID {
		return failed(fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", pvName, pv.Spec.ClaimRef.UID, claim.UID))
	}
	mode := v1.PersistentVolumeFilesystem
	if pv.Spec.VolumeMode != nil {
		mode = *pv.Spec.VolumeMode
	}
	mounts, devices := volumeUses(pod, vol.Name)
	if mounts && mode != v1.PersistentVolumeFilesystem {
		return boundVolume{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeMounts", vol.Name, mode)
	}
	if devices && mode != v1.PersistentVolumeBlock {
		return boundVolume{}, fmt.Errorf("volume %s has volumeMode %s, but is specified in volumeDevices", vol.Name, mode)
	}
	if mode == v1.PersistentVolumeBlock {
		return boundVolume{}, fmt.Errorf("%w: volume %s: raw block volumes (volumeMode Block)", ErrUnsupported, vol.Name)
	}
	return boundVolume{claim: claim, pv: pv, readOnly: readOnly}, nil
}

// volumeUses reports whether any of pod's containers (init, app and
// ephemeral) names the volume in its volumeMounts, and in its
// volumeDevices.
func volumeUses(pod *v1.Pod, name string) (mounts, devices bool) {
	check := func(vms []v1.VolumeMount, vds []v1.VolumeDevice) {
		for _, m := range vms {
			mounts = mounts || m.Name == name
		}
		for _, d := range vds {
			devices = devices || d.Name == name
		}
	}
	for i := range pod.Spec.InitContainers {
		check(pod.Spec.InitContainers[i].VolumeMounts, pod.Spec.InitContainers[i].VolumeDevices)
	}
	for i := range pod.Spec.Containers {
		check(pod.Spec.Containers[i].VolumeMounts, pod.Spec.Containers[i].VolumeDevices)
	}
	for i := range pod.Spec.EphemeralContainers {
		check(pod.Spec.EphemeralContainers[i].VolumeMounts, pod.Spec.EphemeralContainers[i].VolumeDevices)
	}
	return mounts, devices
}
