//go:build containerd

package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

const imageVolumePod = `apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  terminationGracePeriodSeconds: 2
  restartPolicy: Never
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: Never
    command: ["sh", "-c", "test -x /tools/bin/busybox && ! touch /tools/x"]
    volumeMounts: [{name: tools, mountPath: /tools}]
  volumes:
  - name: tools
    image: {reference: IMAGE, pullPolicy: Never}
`

// An image volume (ImageVolume) on a real containerd: the node hands the
// runtime the image as the mount's source, as upstream's kubelet does, and
// leaves it to the runtime to mount. containerd 2.1 and later mount it
// read-only (the container finds busybox's files there and cannot write:
// the pod Succeeds); containerd 1.6 does not know the CRI field and fails
// to create the container, which waits in CreateContainerError with the
// runtime's message, as under upstream's kubelet on that runtime.
func TestContainerdImageVolume(t *testing.T) {
	n, image := ctrdNode(t)
	v, err := n.a.Runtime().Version(context.Background(), "v1")
	require.NoError(t, err)
	t.Logf("containerd %s", v.GetRuntimeVersion())
	mounts := !strings.HasPrefix(strings.TrimPrefix(v.GetRuntimeVersion(), "v"), "1.")
	m := strings.ReplaceAll(strings.Replace(imageVolumePod, "NAME", "imagevol", 1), "IMAGE", image)
	n.write("imagevol.yaml", m)
	if mounts {
		p := n.waitPod("imagevol-node1", "Succeeded", func(p v1.Pod) bool {
			return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
		})
		assert.Equal(t, v1.PodSucceeded, p.Status.Phase, "containerd %s: %+v", v.GetRuntimeVersion(), p.Status.ContainerStatuses)
		return
	}
	p := n.waitPod("imagevol-node1", "CreateContainerError", func(p v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerError"
	})
	assert.Contains(t, p.Status.ContainerStatuses[0].State.Waiting.Message, "failed to mkdir", "containerd %s", v.GetRuntimeVersion())
}
