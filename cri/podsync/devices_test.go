package podsync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

// devicesFunc is a ContainerDevices hook for tests.
type devicesFunc func(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error

func (f devicesFunc) ApplyDevices(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	return f(ctx, pod, c, cfg)
}

func TestContainerDevices(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"applied", nil},
		{"refused", errors.New("device plugin PreStartContainer rpc failed with err: not ready")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var seen []string
			s, err := podsync.New(podsync.Options{Runtime: h.rt, LogRoot: t.TempDir(), Recorder: h.rec,
				Devices: devicesFunc(func(_ context.Context, _ *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
					seen = append(seen, c.Name)
					if tc.err != nil {
						return tc.err
					}
					cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: "/dev/gpu0", HostPath: "/dev/gpu0", Permissions: "rw"})
					return nil
				})})
			require.NoError(t, err)
			pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
			st := step(t, s.SyncPod(context.Background(), pod, h.status(pod)), "app")
			assert.Equal(t, []string{"app"}, seen)
			if tc.err != nil {
				require.ErrorIs(t, st.Err, podsync.ErrCreateContainerConfig)
				assert.Equal(t, podsync.ReasonCreateContainerConfigError, st.Reason)
				assert.Empty(t, h.rt.CallsOf(fake.CreateContainer))
				return
			}
			require.NoError(t, st.Err)
			created := h.rt.CallsOf(fake.CreateContainer)
			require.Len(t, created, 1)
			assert.Equal(t, "/dev/gpu0", created[0].Request.(*runtimeapi.CreateContainerRequest).GetConfig().GetDevices()[0].GetContainerPath())
		})
	}
}
