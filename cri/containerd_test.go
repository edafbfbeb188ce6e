//go:build containerd

// These tests run the client against a real containerd with runc. They are
// built only with -tags containerd; hack/containerd-start.sh starts the
// runtime and sets KK_CRI_ENDPOINT and KK_BUSYBOX_IMAGE (see hack/README.md).

package cri_test

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

func containerdClient(t *testing.T) (*cri.Client, string) { return ctrdtest.Client(t) }

// runHostNetworkSandbox runs a host-network sandbox that the test removes
// when it ends.
func runHostNetworkSandbox(ctx context.Context, t *testing.T, c *cri.Client, name, logDir string) (string, *runtimeapi.PodSandboxConfig) {
	t.Helper()
	uid := "kk-" + strings.ReplaceAll(t.Name(), "/", "-")
	config := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "kubeletkit-test", Uid: uid},
		LogDirectory: logDir,
		Labels:       map[string]string{"io.kubernetes.pod.uid": uid},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			},
		},
	}
	id, err := c.RunPodSandbox(ctx, config, "")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, c.StopPodSandbox(ctx, id))
		assert.NoError(t, c.RemovePodSandbox(ctx, id))
	})
	return id, config
}

// waitFor polls cond every 50ms until it holds or the deadline passes: the
// runtime is real, so its state changes in real time.
func waitFor(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %s waiting for %s", deadline, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestContainerdLifecycle(t *testing.T) {
	c, image := containerdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	v := c.RuntimeVersion()
	assert.Equal(t, "v1", v.RuntimeApiVersion)
	assert.Equal(t, "containerd", v.RuntimeName)

	st, err := c.Status(ctx, false)
	require.NoError(t, err)
	for _, cond := range st.Status.Conditions {
		if cond.Type == runtimeapi.RuntimeReady {
			assert.True(t, cond.Status, "RuntimeReady")
		}
	}

	img, err := c.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
	require.NoError(t, err)
	require.NotNil(t, img.Image, "image %s must be imported by hack/containerd-start.sh", image)

	logDir := t.TempDir()
	sandboxID, sandboxConfig := runHostNetworkSandbox(ctx, t, c, "lifecycle", logDir)
	uid := sandboxConfig.Metadata.Uid

	sb, err := c.PodSandboxStatus(ctx, sandboxID, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.PodSandboxState_SANDBOX_READY, sb.Status.State)
	assert.Equal(t, runtimeapi.NamespaceMode_NODE, sb.Status.GetLinux().GetNamespaces().GetOptions().GetNetwork())

	list, err := c.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, sandboxID, list[0].Id)

	containerID, err := c.CreateContainer(ctx, sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "main"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  []string{"sh", "-c", "echo hello from busybox; exec sleep 3600"},
		LogPath:  "main/0.log",
		// A PID namespace of its own, as a kubelet asks for unless the pod
		// shares its process namespace: CRI's zero value is POD, where the
		// sandbox's pause process is PID 1.
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{
				Network: runtimeapi.NamespaceMode_NODE,
				Pid:     runtimeapi.NamespaceMode_CONTAINER,
			},
		}},
	}, sandboxConfig)
	require.NoError(t, err)
	require.NoError(t, c.StartContainer(ctx, containerID))

	waitFor(t, "the container to run", 30*time.Second, func() bool {
		s, err := c.ContainerStatus(ctx, containerID, false)
		require.NoError(t, err)
		return s.Status.State == runtimeapi.ContainerState_CONTAINER_RUNNING
	})

	res, err := c.ExecSync(ctx, containerID, []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "out\n", string(res.Stdout))
	assert.Equal(t, "err\n", string(res.Stderr))
	assert.Equal(t, int32(3), res.ExitCode)

	logPath := filepath.Join(logDir, "main/0.log")
	waitFor(t, "the log line", 30*time.Second, func() bool {
		data, err := os.ReadFile(logPath)
		return err == nil && strings.Contains(string(data), "hello from busybox")
	})
	f, err := os.Open(logPath)
	require.NoError(t, err)
	line, err := bufio.NewReader(f).ReadString('\n')
	require.NoError(t, f.Close())
	require.NoError(t, err)
	fields := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 4)
	require.Len(t, fields, 4, "CRI log format: time stream tag content")
	_, err = time.Parse(time.RFC3339Nano, fields[0])
	assert.NoError(t, err)
	assert.Equal(t, []string{"stdout", "F", "hello from busybox"}, fields[1:])

	stats, err := c.ContainerStats(ctx, containerID)
	require.NoError(t, err)
	assert.Equal(t, containerID, stats.GetAttributes().GetId())

	// sleep is PID 1 of its namespace, where a signal without a handler is
	// ignored: SIGTERM does nothing, so the stop waits for its timeout and
	// kills (137).
	require.NoError(t, c.StopContainer(ctx, containerID, 1))
	s, err := c.ContainerStatus(ctx, containerID, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, s.Status.State)
	assert.Equal(t, int32(137), s.Status.ExitCode)
	assert.NotZero(t, s.Status.FinishedAt)

	require.NoError(t, c.RemoveContainer(ctx, containerID))
	_, err = c.ContainerStatus(ctx, containerID, false)
	assert.ErrorIs(t, err, cri.ErrNotFound)
}

func TestContainerdExitCode(t *testing.T) {
	c, image := containerdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sandboxID, sandboxConfig := runHostNetworkSandbox(ctx, t, c, "exit", "")
	id, err := c.CreateContainer(ctx, sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "exit3"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  []string{"sh", "-c", "exit 3"},
	}, sandboxConfig)
	require.NoError(t, err)
	require.NoError(t, c.StartContainer(ctx, id))
	var status *runtimeapi.ContainerStatus
	waitFor(t, "the container to exit", 30*time.Second, func() bool {
		s, err := c.ContainerStatus(ctx, id, false)
		require.NoError(t, err)
		status = s.Status
		return status.State == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	assert.Equal(t, int32(3), status.ExitCode)
	assert.Equal(t, "Error", status.Reason)
}

func TestContainerdEvents(t *testing.T) {
	c, _ := containerdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// containerd 1.6 has no GetContainerEvents: the client must say so with
	// ErrUnimplemented rather than hang or end silently. containerd 1.7 and
	// 2.x have it and must report the sandboxes this test starts.
	hasEvents := ctrdtest.HasContainerEvents(t, c)
	v := c.RuntimeVersion()
	t.Logf("runtime %s %s: events expected: %v", v.RuntimeName, v.RuntimeVersion, hasEvents)
	// Make events while the test follows them: sandboxes run and removed,
	// one after the other until the test has seen an event for one (the
	// stream may open after the first is gone) or returns. Their events are
	// known by the sandbox metadata they carry: one can come before
	// RunPodSandbox has returned the ID.
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		config := &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "events", Namespace: "kubeletkit-test", Uid: "kk-events"},
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
			}},
		}
		for attempt := uint32(0); ; attempt++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			config.Metadata.Attempt = attempt
			id, err := c.RunPodSandbox(ctx, config, "")
			if err == nil {
				err = c.RemovePodSandbox(context.Background(), id)
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		assert.NoError(t, <-done)
	}()
	for ev, err := range c.GetContainerEvents(ctx) {
		if err != nil {
			require.False(t, hasEvents, "event stream of %s %s failed: %v", v.RuntimeName, v.RuntimeVersion, err)
			require.ErrorIs(t, err, cri.ErrUnimplemented, "event stream failed")
			return
		}
		require.True(t, hasEvents, "an event from %s %s, which has no GetContainerEvents", v.RuntimeName, v.RuntimeVersion)
		t.Logf("event %s for %s", ev.ContainerEventType, ev.ContainerId)
		require.NotNil(t, ev.PodSandboxStatus, "an event carries its sandbox's status")
		if ev.PodSandboxStatus.GetMetadata().GetUid() == "kk-events" {
			// A sandbox's own events name it as the container.
			assert.Equal(t, ev.ContainerId, ev.PodSandboxStatus.Id)
			assert.Equal(t, "events", ev.PodSandboxStatus.GetMetadata().GetName())
			return
		}
	}
	t.Fatal("the event stream ended with neither an event for our sandbox nor an error")
}

func TestContainerdMissingSocket(t *testing.T) {
	_, err := cri.Dial(context.Background(), "unix:///run/kubeletkit-no-such-dir/containerd.sock", cri.DialOptions{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "no socket at /run/kubeletkit-no-such-dir/containerd.sock")
}

// TestContainerdRuntimeConfig asks containerd for its cgroup driver, as a
// kubelet does at start (KubeletCgroupDriverFromCRI): containerd 2.x
// answers SYSTEMD or CGROUPFS; 1.6 does not implement the call, which
// reaches the caller as ErrUnimplemented (the kubelet then keeps its
// configured driver).
func TestContainerdRuntimeConfig(t *testing.T) {
	c, _ := containerdClient(t)
	resp, err := c.RuntimeConfig(context.Background())
	if errors.Is(err, cri.ErrUnimplemented) {
		t.Logf("RuntimeConfig is not implemented (containerd 1.6): %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	switch d := resp.GetLinux().GetCgroupDriver(); d {
	case runtimeapi.CgroupDriver_SYSTEMD, runtimeapi.CgroupDriver_CGROUPFS:
		t.Logf("containerd's cgroup driver: %s", d)
	default:
		t.Errorf("unknown cgroup driver %d in %v", d, resp)
	}
}
