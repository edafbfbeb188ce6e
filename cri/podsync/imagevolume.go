package podsync

import (
	"context"
	"maps"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// imageVolumePull is the outcome of pulling one image volume's image:
// spec, the image the runtime mounts; or, when the pull failed, the
// waiting reason, its sentinel and the error (with the waiting message)
// of the containers that mount the volume.
type imageVolumePull struct {
	spec     *runtimeapi.ImageSpec
	reason   string
	sentinel error
	err      error
}

// pullImageVolumes makes present the image of each of the pod's image
// volumes (upstream's ImageVolume), in the order of spec.volumes, through
// the same path as containers' images (ensureImage): the volume's pull
// policy, the pod's pull secrets and the node's credentials, the pull
// records, the per-pod back-off keyed by the image, and the events on the
// pod (Pulling, Pulled, Failed, BackOff, ErrImageNeverPull,
// InspectFailed). Every volume is pulled, whether a container mounts it or
// not, and a failure does not stop the others, as upstream's
// getImageVolumes.
//
// A sync calls it once, lazily, when its first container gets past its
// crash-loop back-off: upstream 1.36.3 pulls them in every SyncPod, even
// one that starts nothing, which raised a Pulled event (or, for pull
// policy Always, a pull) per image volume on every sync of a running pod;
// upstream's fix (kubernetes/kubernetes#138655) pulls them only when a
// container is to start, as here.
func (s *Syncer) pullImageVolumes(ctx context.Context, pod *v1.Pod, sbConfig *runtimeapi.PodSandboxConfig) map[string]imageVolumePull {
	var out map[string]imageVolumePull
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image == nil {
			continue
		}
		if out == nil {
			out = map[string]imageVolumePull{}
		}
		ref, reason, sentinel, err := s.ensureImage(ctx, pod, vol.Image.Reference, ImageVolumePullPolicy(vol.Image), sbConfig)
		if err != nil {
			s.log.Info("Failed to ensure the image of an image volume", "pod", podDesc(pod), "volume", vol.Name, "err", logValue(err))
			out[vol.Name] = imageVolumePull{reason: reason, sentinel: sentinel, err: err}
			continue
		}
		out[vol.Name] = imageVolumePull{spec: &runtimeapi.ImageSpec{
			Image:              ref,
			UserSpecifiedImage: vol.Image.Reference,
			Annotations:        maps.Clone(pod.Annotations),
		}}
	}
	return out
}

// containerImageVolumes returns the images of the image volumes container
// c mounts, pulling the pod's image volumes first if this sync has not.
// When the pull of one it mounts failed, the container cannot start: a
// Warning Failed event "Error: <reason>" for each such mount, and the
// last one's failure is returned, with its waiting reason (ErrImagePull,
// ImagePullBackOff, ErrImageNeverPull, ...) and message, as upstream's.
func (s *Syncer) containerImageVolumes(pod *v1.Pod, c *v1.Container, sb sandboxRef) (containerconfig.ImageVolumes, *imageVolumePull) {
	if sb.imageVolumes == nil {
		return nil, nil
	}
	pulls := sb.imageVolumes()
	if len(pulls) == 0 {
		return nil, nil
	}
	var images containerconfig.ImageVolumes
	var failed *imageVolumePull
	for _, vm := range c.VolumeMounts {
		p, ok := pulls[vm.Name]
		if !ok {
			continue
		}
		if p.err != nil {
			s.event(pod, v1.EventTypeWarning, EventFailed, "Error: %s", p.reason)
			failed = &p
			continue
		}
		if images == nil {
			images = containerconfig.ImageVolumes{}
		}
		images[vm.Name] = p.spec
	}
	if failed != nil {
		return nil, failed
	}
	return images, nil
}
