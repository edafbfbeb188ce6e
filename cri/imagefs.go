package cri

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

// SplitContainerFs reports whether an ImageFsInfo answer puts the
// containers' writable layers on another filesystem than the images
// (upstream's KubeletSeparateDiskGC), as upstream decides it: the first
// container filesystem and the first image filesystem both name a
// mountpoint, and the two differ. A runtime that reports no container
// filesystem keeps them together.
func SplitContainerFs(info *runtimeapi.ImageFsInfoResponse) bool {
	im, cf := info.GetImageFilesystems(), info.GetContainerFilesystems()
	if len(im) == 0 || len(cf) == 0 || im[0].GetFsId() == nil || cf[0].GetFsId() == nil {
		return false
	}
	return im[0].GetFsId().GetMountpoint() != cf[0].GetFsId().GetMountpoint()
}
