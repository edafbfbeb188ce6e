package containerconfig

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// verifyRunAsNonRoot refuses, as upstream does before creating a container,
// a container whose effective security context says runAsNonRoot and that
// would run as root: its runAsUser (the container's, else the pod's) is 0,
// or it sets none and its image's user is root (or a name, which cannot be
// checked, or an impossible UID). The image's user comes from
// Options.Images, asked only when the check needs it (without Images, the
// container is refused). The error's text is upstream's, the container's
// CreateContainerConfigError message.
func (b *Builder) verifyRunAsNonRoot(ctx context.Context, pod *v1.Pod, c *v1.Container) error {
	nonRoot, user := effectiveRunAsNonRoot(pod, c)
	if !nonRoot {
		return nil
	}
	if user != nil {
		if *user == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(pod), c.Name)
		}
		return nil
	}
	if b.opts.Images == nil {
		return fmt.Errorf("container has runAsNonRoot and its image's user cannot be verified, no image source defined (pod: %q, container: %s)", podDesc(pod), c.Name)
	}
	resp, err := b.opts.Images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
	if err != nil {
		return err
	}
	img := resp.GetImage()
	switch {
	case img.GetUid() != nil:
		uid := img.GetUid().GetValue()
		if uid == 0 {
			return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)
		}
		if uid < 0 || uid > math.MaxInt32 {
			return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)",
				uid, math.MaxInt32, math.MaxInt32, podDesc(pod), c.Name)
		}
		return nil
	case img.GetUsername() != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", img.GetUsername(), podDesc(pod), c.Name)
	}
	// An image that names no user runs as root.
	return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)
}

// effectiveRunAsNonRoot merges the pod's and the container's security
// contexts (the container's fields win): whether runAsNonRoot is set and
// true, and the runAsUser, if any.
func effectiveRunAsNonRoot(pod *v1.Pod, c *v1.Container) (bool, *int64) {
	var nonRoot *bool
	var user *int64
	if psc := pod.Spec.SecurityContext; psc != nil {
		nonRoot, user = psc.RunAsNonRoot, psc.RunAsUser
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsNonRoot != nil {
			nonRoot = csc.RunAsNonRoot
		}
		if csc.RunAsUser != nil {
			user = csc.RunAsUser
		}
	}
	return nonRoot != nil && *nonRoot, user
}
