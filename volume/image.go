package volume

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// imagePlugin is the image volume plugin (upstream's ImageVolume, GA in
// 1.36): the volume is an OCI image that the container runtime mounts
// read-only into the containers that mount it, pulled by the pod's sync
// (package cri/podsync) before its containers start. Nothing is made on
// the host: SetUp only says so, as upstream's plugin is a stub that lets
// the volume manager count the volume as mounted.
type imagePlugin struct{}

var _ Plugin = imagePlugin{}

func (imagePlugin) Name() string                    { return ImagePluginName }
func (imagePlugin) CanSupport(spec *v1.Volume) bool { return spec.Image != nil }

// SetUp makes nothing: the volume is read-only and has no host path.
func (imagePlugin) SetUp(context.Context, *Volume) (Mounted, error) {
	return Mounted{ReadOnly: true, Image: true}, nil
}

// TearDown does nothing: the runtime's mount goes with the container.
func (imagePlugin) TearDown(context.Context, *Volume) error { return nil }
