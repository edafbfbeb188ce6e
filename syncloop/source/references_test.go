package source_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

func TestAPIObjectReference(t *testing.T) {
	ref := v1.LocalObjectReference{Name: "x"}
	ctr := func(mod func(c *v1.Container)) v1.PodSpec {
		c := v1.Container{Name: "c", Image: "i"}
		mod(&c)
		return v1.PodSpec{Containers: []v1.Container{c}}
	}
	vol := func(vs v1.VolumeSource) v1.PodSpec {
		return v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}, Volumes: []v1.Volume{{Name: "v", VolumeSource: vs}}}
	}
	projected := func(s v1.VolumeProjection) v1.PodSpec {
		return vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{s}}})
	}
	tests := []struct {
		name string
		spec v1.PodSpec
		want string
	}{
		{"nothing", vol(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}), ""},
		{"host path and downward API", vol(v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}), ""},
		{"projected downward API", projected(v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{}}), ""},
		{"service account", v1.PodSpec{ServiceAccountName: "sa"}, "serviceaccounts"},
		{"image pull secret", v1.PodSpec{ImagePullSecrets: []v1.LocalObjectReference{ref}}, "secrets"},
		{"envFrom secret", ctr(func(c *v1.Container) {
			c.EnvFrom = []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: ref}}}
		}), "secrets"},
		{"secretKeyRef in an init container", v1.PodSpec{InitContainers: []v1.Container{{Name: "i", Env: []v1.EnvVar{{Name: "A",
			ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: ref, Key: "k"}}}}}}}, "secrets"},
		{"secret volume", vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x"}}), "secrets"},
		{"CSI with a publish secret", vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &ref}}), "secrets"},
		{"projected secret", projected(v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: ref}}), "secrets"},
		{"envFrom configMap", ctr(func(c *v1.Container) {
			c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref}}}
		}), "configmaps"},
		{"configMapKeyRef", ctr(func(c *v1.Container) {
			c.Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: ref, Key: "k"}}}}
		}), "configmaps"},
		{"configMap volume", vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: ref}}), "configmaps"},
		{"projected configMap", projected(v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: ref}}), "configmaps"},
		{"resource claim", v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpu"}}}, "resourceclaims"},
		{"CSI", vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d"}}), "csidrivers (via CSI volumes)"},
		{"persistent volume claim", vol(v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}), "persistentvolumeclaims"},
		{"ephemeral", vol(v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}), "persistentvolumeclaims (via ephemeral volumes)"},
		{"projected token", projected(v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}}), "serviceaccounts (via projected volumes)"},
		{"projected trust bundle", projected(v1.VolumeProjection{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}}), "clustertrustbundles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, source.APIObjectReference(&v1.Pod{Spec: tt.spec}))
		})
	}
}

func TestFileAllowAPIReferences(t *testing.T) {
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: vols}\nspec:\n  containers: [{name: c, image: i}]\n  volumes: [{name: v, configMap: {name: cfg}}]\n"
	refused := startFile(t, map[string]string{"vols.yaml": manifest, "web.yaml": webManifest})
	assert.Equal(t, []string{"web-" + nodeName}, refused.next(), "refused as upstream refuses it; the other pod stays")
	assert.ErrorContains(t, refused.f.Errors()[refused.dir+"/vols.yaml"], "static pods may not reference configmaps")

	allowed := startFile(t, map[string]string{"vols.yaml": manifest}, func(o *source.FileOptions) { o.AllowAPIReferences = true })
	require.Equal(t, []string{"vols-" + nodeName}, allowed.next())
}
