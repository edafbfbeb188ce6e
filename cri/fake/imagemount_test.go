package fake_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// TestCreateContainerImageMounts: a mount of an image (an image volume)
// needs its image present, no host path and read-only, as containerd's;
// the container's status keeps it; what is under it is the image's, which
// the fake does not know: it never reads a host path for it.
func TestCreateContainerImageMounts(t *testing.T) {
	e := newEnv(t, fake.Options{Images: []string{"busybox", "registry.example/models:v1"}})
	sb, cfg := e.runPod("pod-img")
	models := &runtimeapi.ImageSpec{Image: "registry.example/models:v1", UserSpecifiedImage: "registry.example/models:v1"}
	for _, tc := range []struct {
		name  string
		mount *runtimeapi.Mount
		want  error
	}{
		{"absent image", &runtimeapi.Mount{ContainerPath: "/m", Readonly: true, Image: &runtimeapi.ImageSpec{Image: "registry.example/other:v1"}}, cri.ErrNotFound},
		{"host path", &runtimeapi.Mount{ContainerPath: "/m", HostPath: "/etc", Readonly: true, Image: models}, cri.ErrInvalidArgument},
		{"read-write", &runtimeapi.Mount{ContainerPath: "/m", Image: models}, cri.ErrInvalidArgument},
		{"no image reference", &runtimeapi.Mount{ContainerPath: "/m", Readonly: true, Image: &runtimeapi.ImageSpec{}}, cri.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := containerConfig("bad", "busybox", "sleep", "3600")
			cc.Mounts = []*runtimeapi.Mount{tc.mount}
			_, err := e.rt.CreateContainer(t.Context(), sb, cc, cfg)
			require.ErrorIs(t, err, tc.want)
		})
	}

	cc := containerConfig("app", "busybox", "sleep", "3600")
	mount := &runtimeapi.Mount{ContainerPath: "/models", Readonly: true, Image: models, ImageSubPath: "llm"}
	cc.Mounts = []*runtimeapi.Mount{mount}
	id := e.create(sb, cfg, cc)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))
	st := e.status(id)
	require.Len(t, st.GetMounts(), 1)
	assert.True(t, proto.Equal(mount, st.GetMounts()[0]), "the status keeps the mount: %v", st.GetMounts()[0])

	for _, tc := range []struct {
		argv   []string
		stdout string
		stderr string
		code   int32
	}{
		{[]string{"cat", "/models/weights"}, "", "", 0}, // the image's: unknown, no output
		{[]string{"test", "-e", "/models/weights"}, "", "", 1},
		{[]string{"mkdir", "/models/x"}, "", "mkdir: can't create directory '/models/x': the fake runtime does not write to mounts\n", 1},
	} {
		t.Run(tc.argv[0], func(t *testing.T) {
			resp, err := e.rt.ExecSync(t.Context(), id, tc.argv, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.stdout, string(resp.Stdout))
			assert.Equal(t, tc.stderr, string(resp.Stderr))
			assert.Equal(t, tc.code, resp.ExitCode)
		})
	}
}
