package source

import (
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateMore holds the API server's checks that a pod from a static
// source would otherwise get past, with upstream's field paths and
// messages: label and annotation syntax and size, one source per volume and
// relative item paths without "..", one handler per probe and non-negative
// probe numbers, and subPaths without "..". A pod that fails them is
// refused, rather than left stuck when the kubelet acts on the field.
func validateMore(pod *v1.Pod) field.ErrorList {
	meta, spec := field.NewPath("metadata"), field.NewPath("spec")
	errs := metav1validation.ValidateLabels(pod.Labels, meta.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(pod.Annotations, meta.Child("annotations"))...)
	for i := range pod.Spec.Volumes {
		errs = append(errs, validateVolumeSource(&pod.Spec.Volumes[i].VolumeSource, spec.Child("volumes").Index(i))...)
	}
	containers := func(name string, cs []v1.Container) {
		for i := range cs {
			c, p := &cs[i], spec.Child(name).Index(i)
			errs = append(errs, validateProbe(c.LivenessProbe, p.Child("livenessProbe"))...)
			errs = append(errs, validateProbe(c.ReadinessProbe, p.Child("readinessProbe"))...)
			errs = append(errs, validateProbe(c.StartupProbe, p.Child("startupProbe"))...)
			for j, m := range c.VolumeMounts {
				if m.SubPath != "" {
					errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("volumeMounts").Index(j).Child("subPath"))...)
				}
			}
		}
	}
	containers("initContainers", pod.Spec.InitContainers)
	containers("containers", pod.Spec.Containers)
	return errs
}

// validateVolumeSource requires exactly one source, as upstream: none is
// "must specify a volume type", each one past the first is forbidden. It
// checks the item paths of the sources that write files.
func validateVolumeSource(s *v1.VolumeSource, p *field.Path) field.ErrorList {
	u := union{path: p, kind: "volume type"}
	one := u.member
	one(s.HostPath != nil, "hostPath")
	one(s.EmptyDir != nil, "emptyDir")
	one(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	one(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	one(s.GitRepo != nil, "gitRepo")
	one(s.Secret != nil, "secret")
	one(s.NFS != nil, "nfs")
	one(s.ISCSI != nil, "iscsi")
	one(s.Glusterfs != nil, "glusterfs")
	one(s.PersistentVolumeClaim != nil, "persistentVolumeClaim")
	one(s.RBD != nil, "rbd")
	one(s.FlexVolume != nil, "flexVolume")
	one(s.Cinder != nil, "cinder")
	one(s.CephFS != nil, "cephfs")
	one(s.Flocker != nil, "flocker")
	one(s.DownwardAPI != nil, "downwardAPI")
	one(s.FC != nil, "fc")
	one(s.AzureFile != nil, "azureFile")
	one(s.ConfigMap != nil, "configMap")
	one(s.VsphereVolume != nil, "vsphereVolume")
	one(s.Quobyte != nil, "quobyte")
	one(s.AzureDisk != nil, "azureDisk")
	one(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	one(s.Projected != nil, "projected")
	one(s.PortworxVolume != nil, "portworxVolume")
	one(s.ScaleIO != nil, "scaleIO")
	one(s.StorageOS != nil, "storageos")
	one(s.CSI != nil, "csi")
	one(s.Ephemeral != nil, "ephemeral")
	one(s.Image != nil, "image")
	errs := u.done()
	itemPath := func(target string, p *field.Path) {
		if target == "" {
			errs = append(errs, field.Required(p, ""))
			return
		}
		errs = append(errs, validateLocalNonReservedPath(target, p)...)
	}
	items := func(ks []v1.KeyToPath, p *field.Path) {
		for i, k := range ks {
			itemPath(k.Path, p.Index(i).Child("path"))
		}
	}
	downward := func(fs []v1.DownwardAPIVolumeFile, p *field.Path) {
		for i, f := range fs {
			itemPath(f.Path, p.Index(i).Child("path"))
		}
	}
	switch {
	case s.ConfigMap != nil:
		items(s.ConfigMap.Items, p.Child("configMap", "items"))
	case s.Secret != nil:
		items(s.Secret.Items, p.Child("secret", "items"))
	case s.DownwardAPI != nil:
		downward(s.DownwardAPI.Items, p.Child("downwardAPI", "items"))
	case s.Projected != nil:
		for i, src := range s.Projected.Sources {
			sp := p.Child("projected", "sources").Index(i)
			if src.ConfigMap != nil {
				items(src.ConfigMap.Items, sp.Child("configMap", "items"))
			}
			if src.Secret != nil {
				items(src.Secret.Items, sp.Child("secret", "items"))
			}
			if src.DownwardAPI != nil {
				downward(src.DownwardAPI.Items, sp.Child("downwardAPI", "items"))
			}
			if src.ServiceAccountToken != nil {
				itemPath(src.ServiceAccountToken.Path, sp.Child("serviceAccountToken", "path"))
			}
		}
	}
	return errs
}

// validateProbe requires one handler and non-negative numbers, as upstream.
func validateProbe(pr *v1.Probe, p *field.Path) field.ErrorList {
	if pr == nil {
		return nil
	}
	u := union{path: p, kind: "handler type"}
	u.member(pr.Exec != nil, "exec")
	u.member(pr.HTTPGet != nil, "httpGet")
	u.member(pr.TCPSocket != nil, "tcpSocket")
	u.member(pr.GRPC != nil, "grpc")
	errs := u.done()
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds},
		{"timeoutSeconds", pr.TimeoutSeconds},
		{"periodSeconds", pr.PeriodSeconds},
		{"successThreshold", pr.SuccessThreshold},
		{"failureThreshold", pr.FailureThreshold},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.value), p.Child(f.name))...)
	}
	return errs
}

// union checks that exactly one member of a union (a volume's sources, a
// probe's handlers) is set, with upstream's messages: each member past the
// first is forbidden, none at all is required.
type union struct {
	path *field.Path
	kind string // "volume type", "handler type"
	n    int
	errs field.ErrorList
}

// member counts the member name if it is set.
func (u *union) member(set bool, name string) {
	if !set {
		return
	}
	if u.n++; u.n > 1 {
		u.errs = append(u.errs, field.Forbidden(u.path.Child(name), "may not specify more than 1 "+u.kind))
	}
}

// done returns the errors, with one if no member was set.
func (u *union) done() field.ErrorList {
	if u.n == 0 {
		u.errs = append(u.errs, field.Required(u.path, "must specify a "+u.kind))
	}
	return u.errs
}

// validateLocalDescendingPath refuses an absolute path and one with a ".."
// element, as upstream does for subPaths.
func validateLocalDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	for _, part := range strings.Split(filepath.ToSlash(target), "/") {
		if part == ".." {
			errs = append(errs, field.Invalid(p, target, "must not contain '..'"))
			break
		}
	}
	return errs
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
