//go:build containerd

// This test follows the log of a busybox container in a real containerd
// while a Rotator rotates it. It is built only with -tags containerd;
// hack/containerd-start.sh starts the runtime and sets KK_CRI_ENDPOINT and
// KK_BUSYBOX_IMAGE. Real time passes in the runtime, so the test waits on
// conditions with deadlines.

package logs_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/logs"
	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

// countingRuntime counts the log reopens, that is the rotations done.
type countingRuntime struct {
	*cri.Client
	reopens atomic.Int32
}

func (c *countingRuntime) ReopenContainerLog(ctx context.Context, id string) error {
	err := c.Client.ReopenContainerLog(ctx, id)
	if err == nil {
		c.reopens.Add(1)
	}
	return err
}

func TestContainerdFollowAcrossRotation(t *testing.T) {
	client, image := ctrdtest.Client(t)
	rt := &countingRuntime{Client: client}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	uid := "kk-logs-" + strings.ReplaceAll(t.Name(), "/", "-")
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "logs", Namespace: "kubeletkit-test", Uid: uid},
		LogDirectory: t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}
	sandbox, err := rt.RunPodSandbox(ctx, sbConfig, "")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, rt.StopPodSandbox(ctx, sandbox))
		assert.NoError(t, rt.RemovePodSandbox(ctx, sandbox))
	})

	// About 60 bytes a line in the file, 20 lines a second or so: the
	// log reaches MaxSize a few times a second, and the rotator (whose
	// file names change each second) rotates it about once a second.
	const lines = 300
	script := fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo "line $i"; i=$((i+1)); sleep 0.05; done`, lines)
	id, err := rt.CreateContainer(ctx, sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "counter"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  []string{"sh", "-c", script},
		LogPath:  "counter/0.log",
	}, sbConfig)
	require.NoError(t, err)

	rotator, err := logs.NewRotator(logs.RotatorOptions{Runtime: rt, MaxSize: 512, MaxFiles: 3, Interval: 200 * time.Millisecond})
	require.NoError(t, err)
	rotCtx, stopRotator := context.WithCancel(ctx)
	rotDone := make(chan error, 1)
	go func() { rotDone <- rotator.Run(rotCtx) }()
	defer func() {
		stopRotator()
		require.NoError(t, <-rotDone)
	}()

	require.NoError(t, rt.StartContainer(ctx, id))
	resp, err := rt.ContainerStatus(ctx, id, false)
	require.NoError(t, err)
	path := resp.GetStatus().GetLogPath()

	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- logs.ReadLogs(ctx, path, id, &logs.Options{Follow: true}, rt, out, out) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the follower did not end; it read %d bytes", len(out.String()))
	}
	assert.Equal(t, numbered(1, lines), out.String(), "every line once, in order")
	t.Logf("%d rotations while following", rt.reopens.Load())
	assert.GreaterOrEqual(t, rt.reopens.Load(), int32(3), "the log was rotated while followed")
	files, err := logs.AllLogs(path)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(files), 3, "%v", files)
}
