// Package ctrdtest connects integration tests to the containerd that
// hack/containerd-start.sh runs. Its env file sets KK_CRI_ENDPOINT (the CRI
// socket) and KK_BUSYBOX_IMAGE (an image already pulled there); a test that
// runs without them fails, saying how to set them, rather than skipping.
package ctrdtest
