package agenttest_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
)

// TestVolumeMountsAskForSELinuxRelabel: the container's CRI mounts ask the
// runtime to relabel the volumes whose content the node manages (emptyDir,
// downwardAPI, projected) and /etc/hosts, never a hostPath, as upstream
// asks under seLinuxChangePolicy Recursive (the default) and MountOption
// alike for these volumes, which are never mounted with a context. A
// runtime on a host without SELinux ignores the flag.
// The termination-message file is relabelled only on a host that runs SELinux.
func TestVolumeMountsAskForSELinuxRelabel(t *testing.T) {
	for _, policy := range []*v1.PodSELinuxChangePolicy{nil, ptrTo(v1.SELinuxChangePolicyRecursive), ptrTo(v1.SELinuxChangePolicyMountOption)} {
		name := "default"
		if policy != nil {
			name = string(*policy)
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := agenttest.NewNode(t, agenttest.Options{})
				app := container("app", "sleep", "3600")
				app.VolumeMounts = []v1.VolumeMount{
					{Name: "scratch", MountPath: "/scratch"},
					{Name: "info", MountPath: "/etc/podinfo"},
					{Name: "token", MountPath: "/var/run/token"},
					{Name: "host", MountPath: "/host", ReadOnly: true},
				}
				p := pod("labelled", app)
				p.Spec.SecurityContext = &v1.PodSecurityContext{
					SELinuxOptions:      &v1.SELinuxOptions{Level: "s0:c1,c2"},
					SELinuxChangePolicy: policy,
				}
				p.Spec.Volumes = []v1.Volume{
					{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
					{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
						{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
					{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
						{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
							{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}}}}},
					{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: t.TempDir()}}},
				}
				n.AddPod(p)
				waitRunning(t, n, "labelled")
				relabel := map[string]bool{}
				for _, m := range createRequest(t, n, "app").GetConfig().GetMounts() {
					relabel[m.GetContainerPath()] = m.GetSelinuxRelabel()
				}
				assert.Equal(t, map[string]bool{
					"/scratch": true, "/etc/podinfo": true, "/var/run/token": true, "/host": false, "/etc/hosts": true,
					// Only on a host that runs SELinux, which the fake
					// runtime's node is not.
					"/dev/termination-log": false,
				}, relabel)
			})
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
