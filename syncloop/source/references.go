package source

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

// APIObjectReference returns what a static pod references in the API
// server, named as upstream's kubelet names it in its refusal ("static pods
// may not reference secrets"): "serviceaccounts" for a service account
// name; "secrets" for any secret (image pull secrets, env, envFrom, secret
// volumes and volumes' secret refs); "configmaps" for any configMap;
// "resourceclaims"; then, by volume, the CSI, glusterFS, persistent volume
// claim, ephemeral and projected service account token, cluster trust
// bundle and pod certificate volumes. It returns "" for a pod that
// references nothing, which may run without an API server.
func APIObjectReference(pod *v1.Pod) string {
	spec := &pod.Spec
	if spec.ServiceAccountName != "" {
		return "serviceaccounts"
	}
	if referencesSecret(spec) {
		return "secrets"
	}
	if referencesConfigMap(spec) {
		return "configmaps"
	}
	if len(spec.ResourceClaims) > 0 {
		return "resourceclaims"
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		switch {
		case v.CSI != nil:
			return "csidrivers (via CSI volumes)"
		case v.Glusterfs != nil:
			return "endpoints (via glusterFS volumes)"
		case v.PersistentVolumeClaim != nil:
			return "persistentvolumeclaims"
		case v.Ephemeral != nil:
			return "persistentvolumeclaims (via ephemeral volumes)"
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ServiceAccountToken != nil:
					return "serviceaccounts (via projected volumes)"
				case s.ClusterTrustBundle != nil:
					return "clustertrustbundles"
				case s.PodCertificate != nil:
					return "podcertificates"
				}
			}
		}
	}
	return ""
}

// validateAPIReferences refuses a static pod that references API objects,
// as upstream's kubelet does.
func validateAPIReferences(pod *v1.Pod) error {
	if r := APIObjectReference(pod); r != "" {
		return fmt.Errorf("%w %s: static pods may not reference %s", validation.ErrInvalidPod, validation.PodRef(pod), r)
	}
	return nil
}

// allContainers calls f with every container of spec, init and ephemeral
// ones included, until f returns true; it reports whether one did.
func allContainers(spec *v1.PodSpec, f func(c *v1.Container) bool) bool {
	for i := range spec.InitContainers {
		if f(&spec.InitContainers[i]) {
			return true
		}
	}
	for i := range spec.Containers {
		if f(&spec.Containers[i]) {
			return true
		}
	}
	for i := range spec.EphemeralContainers {
		if f((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)) {
			return true
		}
	}
	return false
}

func referencesSecret(spec *v1.PodSpec) bool {
	if len(spec.ImagePullSecrets) > 0 {
		return true
	}
	if allContainers(spec, func(c *v1.Container) bool {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		switch {
		case v.Secret != nil, v.AzureFile != nil,
			v.CephFS != nil && v.CephFS.SecretRef != nil,
			v.Cinder != nil && v.Cinder.SecretRef != nil,
			v.FlexVolume != nil && v.FlexVolume.SecretRef != nil,
			v.RBD != nil && v.RBD.SecretRef != nil,
			v.ScaleIO != nil && v.ScaleIO.SecretRef != nil,
			v.ISCSI != nil && v.ISCSI.SecretRef != nil,
			v.StorageOS != nil && v.StorageOS.SecretRef != nil,
			v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			return true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					return true
				}
			}
		}
	}
	return false
}

func referencesConfigMap(spec *v1.PodSpec) bool {
	if allContainers(spec, func(c *v1.Container) bool {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				return true
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				return true
			}
		}
		return false
	}) {
		return true
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		if v.ConfigMap != nil {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					return true
				}
			}
		}
	}
	return false
}
