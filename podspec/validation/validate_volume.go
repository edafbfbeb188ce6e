package validation

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fileModeMsg is upstream's message for a file mode out of range.
const fileModeMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes checks the pod's volumes: names (DNS-1123 labels, unique)
// and sources. It returns the valid volumes by name: a volume mount naming
// an invalid one is refused too, as upstream.
func validateVolumes(vols []v1.Volume, meta *metav1.ObjectMeta, p *field.Path) (map[string]v1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	created := map[string]bool{} // the PVCs the ephemeral volumes make
	if meta != nil && meta.Name != "" {
		for _, vol := range vols {
			if vol.Ephemeral != nil {
				created[meta.Name+"-"+vol.Name] = true
			}
		}
	}
	valid := map[string]v1.VolumeSource{}
	for i, vol := range vols {
		vp := p.Index(i)
		el := validateVolumeSource(&vol.VolumeSource, vp, vol.Name, meta)
		if vol.Name == "" {
			el = append(el, field.Required(vp.Child("name"), ""))
		} else {
			el = append(el, dns1123Label(vol.Name, vp.Child("name"))...)
		}
		if _, dup := valid[vol.Name]; dup {
			el = append(el, field.Duplicate(vp.Child("name"), vol.Name))
		}
		if len(el) == 0 {
			valid[vol.Name] = vol.VolumeSource
		} else {
			errs = append(errs, el...)
		}
		if vol.PersistentVolumeClaim != nil && created[vol.PersistentVolumeClaim.ClaimName] {
			errs = append(errs, field.Invalid(vp.Child("persistentVolumeClaim", "claimName"), vol.PersistentVolumeClaim.ClaimName,
				"must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return valid, errs
}

// validateVolumeSource requires exactly one source, as upstream, in
// upstream's order and with its names (a second source is forbidden, none
// is required), and checks the sources a kubelet mounts itself: emptyDir,
// hostPath, gitRepo, secret, nfs, persistentVolumeClaim, downwardAPI,
// configMap, projected, csi, ephemeral and image.
func validateVolumeSource(s *v1.VolumeSource, p *field.Path, name string, meta *metav1.ObjectMeta) field.ErrorList {
	u := union{path: p, kind: "volume type"}
	if u.member(s.EmptyDir != nil, "emptyDir") && s.EmptyDir.SizeLimit != nil && s.EmptyDir.SizeLimit.Sign() < 0 {
		u.errs = append(u.errs, field.Forbidden(p.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	if u.member(s.HostPath != nil, "hostPath") {
		u.errs = append(u.errs, validateHostPath(s.HostPath, p.Child("hostPath"))...)
	}
	if u.member(s.GitRepo != nil, "gitRepo") {
		gp := p.Child("gitRepo")
		if s.GitRepo.Repository == "" {
			u.errs = append(u.errs, field.Required(gp.Child("repository"), ""))
		}
		u.errs = append(u.errs, validateLocalDescendingPath(s.GitRepo.Directory, gp.Child("directory"))...)
	}
	u.member(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	u.member(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	if u.member(s.Secret != nil, "secret") {
		sp := p.Child("secret")
		if s.Secret.SecretName == "" {
			u.errs = append(u.errs, field.Required(sp.Child("secretName"), ""))
		}
		u.errs = append(u.errs, validateMode(s.Secret.DefaultMode, sp.Child("defaultMode"))...)
		u.errs = append(u.errs, validateItems(s.Secret.Items, sp.Child("items"))...)
	}
	if u.member(s.NFS != nil, "nfs") {
		np := p.Child("nfs")
		if s.NFS.Server == "" {
			u.errs = append(u.errs, field.Required(np.Child("server"), ""))
		}
		if s.NFS.Path == "" {
			u.errs = append(u.errs, field.Required(np.Child("path"), ""))
		}
		if !path.IsAbs(s.NFS.Path) {
			u.errs = append(u.errs, field.Invalid(np.Child("path"), s.NFS.Path, "must be an absolute path"))
		}
	}
	u.member(s.ISCSI != nil, "iscsi")
	u.member(s.Glusterfs != nil, "glusterfs")
	u.member(s.Flocker != nil, "flocker")
	if u.member(s.PersistentVolumeClaim != nil, "persistentVolumeClaim") && s.PersistentVolumeClaim.ClaimName == "" {
		u.errs = append(u.errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
	}
	u.member(s.RBD != nil, "rbd")
	u.member(s.Cinder != nil, "cinder")
	u.member(s.CephFS != nil, "cephFS")
	u.member(s.Quobyte != nil, "quobyte")
	// "downwarAPI" is upstream's spelling in this message.
	if u.member(s.DownwardAPI != nil, "downwarAPI") {
		dp := p.Child("downwardAPI")
		u.errs = append(u.errs, validateMode(s.DownwardAPI.DefaultMode, dp.Child("defaultMode"))...)
		for i := range s.DownwardAPI.Items {
			// Upstream's path: the source's, without the item's index.
			u.errs = append(u.errs, validateDownwardAPIFile(&s.DownwardAPI.Items[i], dp)...)
		}
	}
	u.member(s.FC != nil, "fc")
	u.member(s.FlexVolume != nil, "flexVolume")
	if u.member(s.ConfigMap != nil, "configMap") {
		cp := p.Child("configMap")
		if s.ConfigMap.Name == "" {
			u.errs = append(u.errs, field.Required(cp.Child("name"), ""))
		}
		u.errs = append(u.errs, validateMode(s.ConfigMap.DefaultMode, cp.Child("defaultMode"))...)
		u.errs = append(u.errs, validateItems(s.ConfigMap.Items, cp.Child("items"))...)
	}
	u.member(s.AzureFile != nil, "azureFile")
	u.member(s.VsphereVolume != nil, "vsphereVolume")
	u.member(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	u.member(s.PortworxVolume != nil, "portworxVolume")
	u.member(s.AzureDisk != nil, "azureDisk")
	u.member(s.StorageOS != nil, "storageos")
	if u.member(s.Projected != nil, "projected") {
		pp := p.Child("projected")
		u.errs = append(u.errs, validateMode(s.Projected.DefaultMode, pp.Child("defaultMode"))...)
		u.errs = append(u.errs, validateProjections(s.Projected, pp)...)
	}
	u.member(s.ScaleIO != nil, "scaleIO")
	if u.member(s.CSI != nil, "csi") {
		u.errs = append(u.errs, validateCSIDriverName(s.CSI.Driver, p.Child("csi", "driver"))...)
	}
	if u.member(s.Ephemeral != nil, "ephemeral") {
		if s.Ephemeral.VolumeClaimTemplate == nil {
			u.errs = append(u.errs, field.Required(p.Child("ephemeral", "volumeClaimTemplate"), ""))
		}
		if meta != nil && meta.Name != "" && name != "" {
			pvc := meta.Name + "-" + name
			for _, msg := range apivalidation.NameIsDNSSubdomain(pvc, false) {
				u.errs = append(u.errs, field.Invalid(p.Child("name"), name, fmt.Sprintf("PVC name %q: %v", pvc, msg)))
			}
		}
	}
	if u.member(s.Image != nil, "image") {
		ip := p.Child("image")
		if s.Image.Reference == "" {
			u.errs = append(u.errs, field.Required(ip.Child("reference"), ""))
		}
		u.errs = append(u.errs, oneOf(s.Image.PullPolicy, ip.Child("pullPolicy"), v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)...)
	}
	return u.done()
}

// hostPathTypes are the values of hostPath.type, in upstream's (sorted)
// order.
var hostPathTypes = []v1.HostPathType{v1.HostPathUnset, v1.HostPathBlockDev, v1.HostPathCharDev, v1.HostPathDirectory,
	v1.HostPathDirectoryOrCreate, v1.HostPathFile, v1.HostPathFileOrCreate, v1.HostPathSocket}

// validateHostPath requires a path without ".." and a known type.
func validateHostPath(h *v1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(p.Child("path"), "")}
	}
	errs := validatePathNoBacksteps(h.Path, p.Child("path"))
	if h.Type != nil && !slices.Contains(hostPathTypes, *h.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), h.Type, hostPathTypes))
	}
	return errs
}

// validateMode requires a file mode between 0 and 0777.
func validateMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeMsg)}
	}
	return nil
}

// validateItems checks the items of a secret or configMap: a key, a
// relative path without "..", a mode.
func validateItems(items []v1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range items {
		errs = append(errs, validateKeyToPath(&items[i], p.Index(i))...)
	}
	return errs
}

func validateKeyToPath(kp *v1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(kp.Path, p.Child("path"))...)
	return append(errs, validateMode(kp.Mode, p.Child("mode"))...)
}

// validateDownwardAPIFile checks a downward API file: a relative path
// without "..", exactly one of fieldRef (a field a volume may show) and
// resourceFieldRef (a container's resource), a mode.
func validateDownwardAPIFile(f *v1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, p.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, volumeFieldPaths, p.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, p.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateMode(f.Mode, p.Child("mode"))...)
}

// validateProjections checks a projected volume's sources: one kind each,
// the items of each, and no path written twice.
func validateProjections(pv *v1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := map[string]bool{}
	claim := func(path string, value any) {
		if paths[path] {
			errs = append(errs, field.Invalid(p, value, "conflicting duplicate paths"))
		}
		paths[path] = true
	}
	keyItems := func(name string, items []v1.KeyToPath, sp *field.Path) {
		if name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		}
		for i := range items {
			errs = append(errs, validateKeyToPath(&items[i], sp.Child("items").Index(i))...)
			if items[i].Path != "" {
				claim(items[i].Path, name)
			}
		}
	}
	for i, src := range pv.Sources {
		n := 0
		sp := p.Child("sources").Index(i)
		if src.Secret != nil {
			n++
			keyItems(src.Secret.Name, src.Secret.Items, sp.Child("secret"))
		}
		if src.ConfigMap != nil {
			n++
			keyItems(src.ConfigMap.Name, src.ConfigMap.Items, sp.Child("configMap"))
		}
		if src.DownwardAPI != nil {
			n++
			for j := range src.DownwardAPI.Items {
				f := &src.DownwardAPI.Items[j]
				errs = append(errs, validateDownwardAPIFile(f, sp.Child("downwardAPI"))...)
				if f.Path != "" {
					claim(f.Path, f.Path)
				}
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			tp := sp.Child("serviceAccountToken")
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds < 10*60 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), t.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
			}
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds > 1<<32 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), t.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
			}
			// Upstream's path: the volume's, not the source's.
			if t.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, p.Child("path"))...)
			}
		}
		if b := src.ClusterTrustBundle; b != nil {
			n++
			bp := sp.Child("clusterTrustBundle")
			switch {
			case b.Name != nil && b.SignerName != nil:
				errs = append(errs, field.Invalid(bp, b, "only one of name and signerName may be used"))
			case b.Name == nil && b.SignerName == nil:
				errs = append(errs, field.Required(bp, "either name or signerName must be specified"))
			}
			if b.Path == "" {
				errs = append(errs, field.Required(bp.Child("path"), ""))
			}
			errs = append(errs, validateLocalNonReservedPath(b.Path, bp.Child("path"))...)
			claim(b.Path, b.Path)
		}
		if c := src.PodCertificate; c != nil {
			n++
			cp := sp.Child("podCertificate")
			switch c.KeyType {
			case "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519":
			default:
				errs = append(errs, field.NotSupported(cp.Child("keyType"), c.KeyType, []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}))
			}
			written := 0
			for _, f := range []struct {
				name, path string
			}{{"credentialBundlePath", c.CredentialBundlePath}, {"keyPath", c.KeyPath}, {"certificateChainPath", c.CertificateChainPath}} {
				if f.path == "" {
					continue
				}
				written++
				errs = append(errs, validateLocalNonReservedPath(f.path, cp.Child(f.name))...)
				claim(f.path, f.path)
			}
			if written == 0 {
				errs = append(errs, field.Required(cp, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
			}
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// validateCSIDriverName requires a driver name of at most 63 characters
// that is a DNS-1123 subdomain, in any case.
func validateCSIDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > 63 {
		errs = append(errs, field.TooLong(p, "", 63))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(strings.ToLower(name), false) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateVolumeMounts checks a container's volume mounts: each names a
// valid volume of the pod, at a path no other mount of the container (nor
// device) uses, with a relative subPath or subPathExpr without "..", a
// known mount propagation (Bidirectional only when privileged) and a
// recursiveReadOnly only where it can hold.
func (c containerContext) validateVolumeMounts(ctr *v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	devices := map[string]string{}
	for _, d := range ctr.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	mountpoints := map[string]bool{}
	for i, m := range ctr.VolumeMounts {
		mp := p.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), ""))
		}
		if _, ok := c.volumes[m.Name]; !ok {
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		}
		if mountpoints[m.MountPath] {
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountpoints[m.MountPath] = true
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(mp.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		if hasValue(devices, m.MountPath) {
			errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
		}
		// Upstream's paths: the mounts', without the mount's index.
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(mp.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, p.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			errs = append(errs, validateMountPropagation(*m.MountPropagation, ctr, p.Child("mountPropagation"))...)
		}
		errs = append(errs, validateRecursiveReadOnly(m, p.Child("recursiveReadOnly"))...)
	}
	return errs
}

func hasValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

// validateMountPropagation requires a known mode, and a privileged container
// for Bidirectional.
func validateMountPropagation(mode v1.MountPropagationMode, ctr *v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch mode {
	case v1.MountPropagationBidirectional, v1.MountPropagationHostToContainer, v1.MountPropagationNone:
	default:
		errs = append(errs, field.NotSupported(p, mode, []v1.MountPropagationMode{
			v1.MountPropagationBidirectional, v1.MountPropagationHostToContainer, v1.MountPropagationNone}))
	}
	privileged := ctr.SecurityContext != nil && ctr.SecurityContext.Privileged != nil && *ctr.SecurityContext.Privileged
	if mode == v1.MountPropagationBidirectional && !privileged {
		errs = append(errs, field.Forbidden(p, "Bidirectional mount propagation is available only to privileged containers"))
	}
	return errs
}

// validateRecursiveReadOnly requires a known value, and for Enabled and
// IfPossible a read-only mount without propagation.
func validateRecursiveReadOnly(m v1.VolumeMount, p *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case v1.RecursiveReadOnlyDisabled:
	case v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(p, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			errs = append(errs, field.Forbidden(p, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(p, *m.RecursiveReadOnly, []v1.RecursiveReadOnlyMode{
			v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible}))
	}
	return errs
}

// validateVolumeDevices checks a container's raw block devices: each names
// a persistentVolumeClaim or ephemeral volume, once, at a unique path
// without "..", not also mounted.
func (c containerContext) validateVolumeDevices(ctr *v1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	paths, names := map[string]bool{}, map[string]bool{}
	for i, d := range ctr.VolumeDevices {
		dp := p.Index(i)
		src, matched := c.volumes[d.Name]
		if d.Name == "" {
			errs = append(errs, field.Required(dp.Child("name"), ""))
		}
		if names[d.Name] {
			errs = append(errs, field.Invalid(dp.Child("name"), d.Name, "must be unique"))
		}
		if matched && src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			errs = append(errs, field.Invalid(dp.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if !matched {
			errs = append(errs, field.NotFound(dp.Child("name"), d.Name))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(dp.Child("devicePath"), ""))
		}
		if paths[d.DevicePath] {
			errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, p.Child("devicePath"))) > 0 {
			errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths[d.DevicePath] = true
		}
		if _, ok := mounts[d.Name]; ok {
			errs = append(errs, field.Invalid(dp.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if hasValue(mounts, d.DevicePath) {
			errs = append(errs, field.Invalid(dp.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
		}
		if d.Name != "" {
			names[d.Name] = true
		}
	}
	return errs
}

// validatePathNoBacksteps refuses a path with a ".." element.
func validatePathNoBacksteps(target string, p *field.Path) field.ErrorList {
	for _, part := range strings.Split(filepath.ToSlash(target), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalDescendingPath refuses an absolute path and one with a ".."
// element, as upstream does for subPaths.
func validateLocalDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, p)...)
}

// validateLocalNonReservedPath is validateLocalDescendingPath, and also
// refuses a path that starts with "..", which the atomic writer reserves
// for its own files, as upstream does for volume item paths.
func validateLocalNonReservedPath(target string, p *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, p)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

// union checks that exactly one member of a union (a volume's sources, a
// handler's actions) is set, with upstream's messages: each member past the
// first is forbidden, none at all is required.
type union struct {
	path *field.Path
	kind string // "volume type", "handler type"
	n    int
	errs field.ErrorList
}

// member counts the member name if it is set, and reports whether it is
// the one to check further: the first set.
func (u *union) member(set bool, name string) bool {
	if !set {
		return false
	}
	if u.n++; u.n > 1 {
		u.errs = append(u.errs, field.Forbidden(u.path.Child(name), "may not specify more than 1 "+u.kind))
		return false
	}
	return true
}

// done returns the errors, with one if no member was set.
func (u *union) done() field.ErrorList {
	if u.n == 0 {
		u.errs = append(u.errs, field.Required(u.path, "must specify a "+u.kind))
	}
	return u.errs
}
