package containerconfig_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// imageMountsVolumes is a volume manager that builds mounts as
// volume.Manager does: an image volume's without a host path, read-only,
// its subPath as the image's.
type imageMountsVolumes struct{}

func (imageMountsVolumes) VolumeHostPaths(*v1.Pod) (map[string]string, error) {
	return map[string]string{"data": "/v/data", "models": ""}, nil
}

func (imageMountsVolumes) Mounts(_ *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	for _, vm := range c.VolumeMounts {
		if vm.Name == "models" {
			out = append(out, &runtimeapi.Mount{ContainerPath: vm.MountPath, Readonly: true, ImageSubPath: vm.SubPath})
			continue
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: vm.MountPath, HostPath: "/v/data", Readonly: vm.ReadOnly})
	}
	return out, nil
}

// TestImageVolumeMounts: a mount of an image volume is the runtime's mount
// of the image the sync pulled, as upstream's makeMounts makes it: Image
// set, no host path, read-only, the subPath as ImageSubPath; whichever way
// the builder gets its volumes.
func TestImageVolumeMounts(t *testing.T) {
	spec := &runtimeapi.ImageSpec{Image: "sha256:0123", UserSpecifiedImage: "registry.example/models:v1", Annotations: map[string]string{"a": "b"}}
	images := containerconfig.ImageVolumes{"models": spec}
	hostPaths := containerconfig.VolumeHostPathsFunc(func(*v1.Pod) (map[string]string, error) {
		return map[string]string{"data": "/v/data"}, nil // an image volume has no host path
	})
	for _, tc := range []struct {
		name    string
		volumes containerconfig.VolumeHostPaths
		mounts  []v1.VolumeMount
		images  containerconfig.ImageVolumes
		want    []*runtimeapi.Mount
		wantErr string
	}{
		{name: "host paths: the image, read-only, its subPath", volumes: hostPaths, images: images,
			mounts: []v1.VolumeMount{{Name: "models", MountPath: "/models", SubPath: "llm"}, {Name: "data", MountPath: "/data"}},
			want: []*runtimeapi.Mount{
				{ContainerPath: "/models", Image: spec, Readonly: true, ImageSubPath: "llm"},
				{ContainerPath: "/data", HostPath: "/v/data"},
			}},
		{name: "volume manager's mounts get the image", volumes: imageMountsVolumes{}, images: images,
			mounts: []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}, {Name: "models", MountPath: "/models", SubPath: "llm/w"}},
			want: []*runtimeapi.Mount{
				{ContainerPath: "/data", HostPath: "/v/data", Readonly: true},
				{ContainerPath: "/models", Image: spec, Readonly: true, ImageSubPath: "llm/w"},
			}},
		{name: "not pulled", volumes: imageMountsVolumes{}, images: nil,
			mounts:  []v1.VolumeMount{{Name: "models", MountPath: "/models"}},
			wantErr: `container app: volumeMount models: the image of image volume "models" was not pulled`},
		{name: "host paths, not pulled", volumes: hostPaths, images: containerconfig.ImageVolumes{"other": spec},
			mounts:  []v1.VolumeMount{{Name: "models", MountPath: "/models"}},
			wantErr: `the image of image volume "models" was not pulled`},
		{name: "host paths: subPath with ..", volumes: hostPaths, images: images,
			mounts:  []v1.VolumeMount{{Name: "models", MountPath: "/models", SubPath: "../x"}},
			wantErr: `subPath "../x" must not contain '..'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, containerconfig.Options{Volumes: tc.volumes})
			c := ctr("app")
			c.VolumeMounts = tc.mounts
			pod := newPod("", nil, c)
			pod.Spec.Volumes = []v1.Volume{
				{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "models", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry.example/models:v1"}}},
			}
			cfg, err := b.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", tc.images)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, cfg.GetMounts(), len(tc.want))
			for i := range tc.want {
				assert.Equal(t, tc.want[i].String(), cfg.GetMounts()[i].String(), "mount %d", i)
			}
		})
	}
}
