package imagegc_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
)

// TestImageVolumesAreInUse: an image a container mounts (an image volume)
// is in use while the container exists, as upstream's image GC reads it
// from the containers' statuses.
func TestImageVolumesAreInUse(t *testing.T) {
	e := newEnv(t, imagegc.Policy{}, map[string]uint64{"app": 100, "models": 200, "other": 300})
	id, err := e.rt.CreateContainer(t.Context(), e.sandbox, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "example.com/app:1"},
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/models", Readonly: true,
			Image: &runtimeapi.ImageSpec{Image: "sha256:models", UserSpecifiedImage: "example.com/models:1"}}},
	}, nil)
	require.NoError(t, err)
	require.NoError(t, e.m.DeleteUnusedImages(t.Context())) // first seen
	e.clk.Step(2 * time.Minute)
	require.NoError(t, e.m.DeleteUnusedImages(t.Context()))
	assert.Equal(t, []string{"app", "models"}, e.images(), "the mounted image stays")

	e.drop(id)
	require.NoError(t, e.m.DeleteUnusedImages(t.Context()))
	assert.Empty(t, e.images(), "once no container mounts it, it goes")
}

// TestImageVolumesContainerStatusErrors: a container gone between the
// list and its status mounts nothing; another failure fails the pass, as
// upstream's.
func TestImageVolumesContainerStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{cri.ErrNotFound, nil},
		{cri.ErrUnavailable, cri.ErrUnavailable},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			e := newEnv(t, imagegc.Policy{}, map[string]uint64{"app": 100, "a": 1})
			e.use("app")
			require.NoError(t, e.m.DeleteUnusedImages(t.Context())) // first seen
			e.clk.Step(2 * time.Minute)
			e.rt.InjectFault(fake.ContainerStatus, fake.Fault{Err: tc.err})
			err := e.m.DeleteUnusedImages(t.Context())
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				assert.Equal(t, []string{"a", "app"}, e.images(), "nothing removed")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"app"}, e.images())
		})
	}
}
