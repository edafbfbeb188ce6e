package volume

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Plugin sets up and tears down one kind of volume. The built-ins are
// emptyDir, hostPath, configMap, secret, downwardAPI, projected, csi and
// image;
// Options.Plugins adds others.
//
// SetUp and TearDown are called by the reconciler, never twice at once for
// the same volume; calls for different volumes run concurrently. Both must
// be idempotent: SetUp is called again to refresh content (see Remounter),
// and again for a volume rebuilt from disk after a restart when its pod
// comes back; TearDown is retried after an error.
type Plugin interface {
	// Name is the plugin's qualified name, e.g. "kubernetes.io/empty-dir";
	// its volumes live in <RootDir>/pods/<uid>/volumes/<Name with '/'
	// escaped as '~'>/<volume name>, which is how they are found again
	// after a restart.
	Name() string
	// CanSupport reports whether the plugin handles spec.
	CanSupport(spec *v1.Volume) bool
	// SetUp makes the volume ready for containers and says where it is.
	SetUp(ctx context.Context, v *Volume) (Mounted, error)
	// TearDown undoes SetUp and removes v.Dir and what is in it. Pod and
	// Spec may be nil (a volume found on disk whose pod is gone).
	TearDown(ctx context.Context, v *Volume) error
}

// PersistentPlugin is implemented by plugins that also mount persistent
// volumes, the volumes behind a pod's persistentVolumeClaim and ephemeral
// volumes (upstream's plugins' CanSupport of a volume.Spec holding a
// PersistentVolume). The built-ins: hostPath, local and csi. Such a
// volume's Volume has PersistentVolume set and its Dir is named after the
// persistent volume, as upstream's.
type PersistentPlugin interface {
	CanSupportPersistent(pv *v1.PersistentVolume) bool
}

// Remounter is implemented by plugins whose content follows a source
// (upstream's RequiresRemount): SetUp is called again every
// Options.RefreshPeriod and on Manager.Refresh.
type Remounter interface {
	RequiresRemount(spec *v1.Volume) bool
}

// Volume is one volume of one pod, as a plugin sees it.
type Volume struct {
	// PodUID and Name identify the volume.
	PodUID types.UID
	Name   string
	// Dir is the volume's directory, <RootDir>/pods/<uid>/volumes/<plugin>/<name>
	// (<persistent volume's name> for a claim's volume); it is not
	// created for the plugin.
	Dir string
	// Pod and Spec are the pod and its volume; nil in a TearDown of a
	// volume whose pod is no longer known.
	Pod  *v1.Pod
	Spec *v1.Volume
	// PersistentVolume is the volume bound to the claim of a
	// persistentVolumeClaim or ephemeral Spec (for a PersistentPlugin);
	// nil for other volumes and in every TearDown.
	PersistentVolume *v1.PersistentVolume
	// ReadOnly is the claim source's readOnly (persistentVolumeClaim's;
	// false for an ephemeral volume); only with PersistentVolume.
	ReadOnly bool
}

// Mounted is what SetUp made.
type Mounted struct {
	// HostPath is the path containers mount (Dir, or a host path).
	HostPath string
	// ReadOnly makes every mount of the volume read-only (configMap,
	// secret, downwardAPI and projected are, as upstream).
	ReadOnly bool
	// SELinuxRelabel asks the runtime to relabel the volume with the
	// container's SELinux context (the CRI mount's selinux_relabel), as
	// upstream asks for a volume whose plugin manages its content and can
	// be relabelled: emptyDir, configMap, secret, downwardAPI and projected
	// always; a CSI volume when it is writable and its filesystem carries
	// SELinux labels (the mount's "seclabel" option). A runtime on a host
	// without SELinux ignores it. A hostPath or image volume is never relabelled.
	SELinuxRelabel bool
	// Image says the volume is an OCI image the container runtime mounts
	// itself (an image volume): there is nothing on the host, HostPath is
	// empty, and Mounts gives the volume's mounts without a host path,
	// their subPath as the CRI mount's image_sub_path; the caller fills in
	// the image (package cri/podsync/containerconfig does).
	Image bool
}
