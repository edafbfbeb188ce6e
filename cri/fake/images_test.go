package fake_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestNormalizeImage(t *testing.T) {
	digest := "sha256:" + hex64('b')
	cases := map[string]string{
		"busybox":                            "docker.io/library/busybox:latest",
		"busybox:1.36":                       "docker.io/library/busybox:1.36",
		"library/busybox":                    "docker.io/library/busybox:latest",
		"docker.io/busybox":                  "docker.io/library/busybox:latest",
		"index.docker.io/library/busybox":    "docker.io/library/busybox:latest",
		"bitnami/redis:7":                    "docker.io/bitnami/redis:7",
		"registry.k8s.io/pause:3.10":         "registry.k8s.io/pause:3.10",
		"localhost/app":                      "localhost/app:latest",
		"localhost:5000/app:v1":              "localhost:5000/app:v1",
		"my.registry:5000/team/app":          "my.registry:5000/team/app:latest",
		"nginx@" + digest:                    "docker.io/library/nginx@" + digest,
		"nginx:1.27@" + digest:               "docker.io/library/nginx:1.27@" + digest,
		"sha256:" + hex64('c'):               "sha256:" + hex64('c'),
		hex64('d'):                           hex64('d'),
		"quay.io/prometheus/node-exporter":   "quay.io/prometheus/node-exporter:latest",
		"ghcr.io/org/repo/sub/image:sha-123": "ghcr.io/org/repo/sub/image:sha-123",
	}
	for in, want := range cases {
		assert.Equal(t, want, fake.NormalizeImage(in), in)
	}
}

func TestPullImage(t *testing.T) {
	e := newEnv(t, fake.Options{Images: []string{}})
	ctx := t.Context()
	id, err := e.rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("docker.io/library/busybox:latest"))
	assert.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), id, "sha256 of the normalized reference")

	again, err := e.rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:latest"}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, id, again, "the same image in another spelling")

	resp, err := e.rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:latest"}, false)
	require.NoError(t, err)
	require.NotNil(t, resp.Image)
	assert.Equal(t, id, resp.Image.Id)
	assert.Equal(t, []string{"docker.io/library/busybox:latest"}, resp.Image.RepoTags)
	assert.Empty(t, resp.Image.RepoDigests)
	assert.Positive(t, resp.Image.Size)

	digest := "sha256:" + hex64('e')
	did, err := e.rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx@" + digest}, nil, nil)
	require.NoError(t, err)
	resp, err = e.rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: did}, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"docker.io/library/nginx@" + digest}, resp.Image.RepoDigests)
	assert.Empty(t, resp.Image.RepoTags)

	for _, ref := range []string{id, id[len("sha256:"):], id[:15], "busybox"} {
		resp, err = e.rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
		require.NoError(t, err)
		require.NotNil(t, resp.Image, "by %q", ref)
		assert.Equal(t, id, resp.Image.Id)
	}

	list, err := e.rt.ListImages(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, list, 2)
	list, err = e.rt.ListImages(ctx, &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, id, list[0].Id)
	list, err = e.rt.ListImages(ctx, &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "redis"}})
	require.NoError(t, err)
	assert.Empty(t, list)

	require.NoError(t, e.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}))
	resp, err = e.rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: id}, false)
	require.NoError(t, err)
	assert.Nil(t, resp.Image, "an absent image is a nil Image, not an error")
	require.NoError(t, e.rt.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}), "removing an absent image")

	_, err = e.rt.PullImage(ctx, &runtimeapi.ImageSpec{}, nil, nil)
	require.ErrorIs(t, err, cri.ErrInvalidArgument)
}

func TestPullImageRegistryAndBehavior(t *testing.T) {
	errDenied := errors.New("pull access denied")
	cases := []struct {
		name     string
		registry []string
		behavior fake.PullBehavior
		ref      string
		latency  time.Duration
		want     error
	}{
		{"known to the registry", []string{"busybox:1.36"}, fake.PullBehavior{}, "docker.io/library/busybox:1.36", 0, nil},
		{"unknown to the registry", []string{"busybox:1.36"}, fake.PullBehavior{}, "busybox:1.37", 0, cri.ErrNotFound},
		{"an ID cannot be pulled", nil, fake.PullBehavior{}, "sha256:" + hex64('f'), 0, cri.ErrNotFound},
		{"failure", nil, fake.PullBehavior{Err: errDenied}, "private/app", 0, errDenied},
		{"latency", nil, fake.PullBehavior{Latency: 30 * time.Second}, "private/app", 30 * time.Second, nil},
		{"latency then failure", nil, fake.PullBehavior{Latency: time.Second, Err: errDenied}, "private/app", time.Second, errDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{Images: []string{}, Registry: tc.registry})
			e.rt.SetPullBehavior(tc.ref, tc.behavior)
			done := async(func() error {
				_, err := e.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: tc.ref}, nil, nil)
				return err
			})
			if tc.latency > 0 {
				waitUntil(t, "the pull waits on the clock", e.clk.HasWaiters)
				e.clk.Step(tc.latency - time.Millisecond)
				pending(t, done)
				e.clk.Step(time.Millisecond)
			}
			err := receive(t, done)
			resp, serr := e.rt.ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: tc.ref}, false)
			require.NoError(t, serr)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				assert.Nil(t, resp.Image)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, resp.Image)
		})
	}

	t.Run("a pull whose ctx ends", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		e.rt.SetPullBehavior("nginx", fake.PullBehavior{Latency: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		done := async(func() error {
			_, err := e.rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil)
			return err
		})
		waitUntil(t, "the pull waits on the clock", e.clk.HasWaiters)
		cancel()
		require.ErrorIs(t, receive(t, done), context.Canceled)
	})

	t.Run("a zero behavior restores the default", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		e.rt.SetPullBehavior("nginx", fake.PullBehavior{Err: errDenied})
		e.rt.SetPullBehavior("docker.io/library/nginx", fake.PullBehavior{})
		_, err := e.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil)
		require.NoError(t, err)
	})
}

// A registry that requires credentials refuses a pull without them, or
// with others, and serves one with them.
func TestPullImageRequiresCredentials(t *testing.T) {
	e := newEnv(t, fake.Options{Images: []string{}})
	e.rt.SetPullBehavior("registry.example/team/app:1", fake.PullBehavior{Auth: &runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"}})
	pull := func(auth *runtimeapi.AuthConfig) error {
		_, err := e.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: "registry.example/team/app:1"}, auth, nil)
		return err
	}
	assert.EqualError(t, pull(nil), `failed to pull and unpack image "registry.example/team/app:1": failed to resolve reference "registry.example/team/app:1": `+
		`pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`)
	assert.EqualError(t, pull(&runtimeapi.AuthConfig{Username: "alice", Password: "guess"}), `failed to pull and unpack image "registry.example/team/app:1": failed to resolve reference "registry.example/team/app:1": `+
		`failed to authorize: failed to fetch oauth token: unexpected status from GET request to https://registry.example/token: 401 Unauthorized`)
	resp, err := e.rt.ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: "registry.example/team/app:1"}, false)
	require.NoError(t, err)
	assert.Nil(t, resp.Image, "refused pulls leave nothing")
	require.NoError(t, pull(&runtimeapi.AuthConfig{Username: "alice", Password: "s3cret"}))
	resp, err = e.rt.ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: "registry.example/team/app:1"}, false)
	require.NoError(t, err)
	assert.NotNil(t, resp.Image)
	require.NoError(t, e.rt.RemoveImage(t.Context(), &runtimeapi.ImageSpec{Image: "registry.example/team/app:1"}))
	require.NoError(t, pull(&runtimeapi.AuthConfig{Username: "alice", Password: "s3cret", ServerAddress: "registry.example"}), "only the username and password count")
}

func TestPullImageServedImage(t *testing.T) {
	uid := func(v int64) *runtimeapi.Int64Value { return &runtimeapi.Int64Value{Value: v} }
	cases := []struct {
		name     string
		user     string
		wantUID  *runtimeapi.Int64Value
		wantName string
	}{
		{"no user", "", nil, ""},
		{"a UID", "1002", uid(1002), ""},
		{"a user name", "www-data", nil, "www-data"},
		{"a UID and a group", "1003:1003", uid(1003), ""},
		{"a user name and a group", "www-data:www-data", nil, "www-data"},
		{"root", "0", uid(0), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{Images: []string{}})
			e.rt.SetPullBehavior("example.com/app:1", fake.PullBehavior{User: tc.user})
			_, err := e.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: "example.com/app:1"}, nil, nil)
			require.NoError(t, err)
			resp, err := e.rt.ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: "example.com/app:1"}, false)
			require.NoError(t, err)
			assert.Equal(t, tc.wantUID.GetValue(), resp.Image.GetUid().GetValue())
			assert.Equal(t, tc.wantUID == nil, resp.Image.GetUid() == nil, "uid set")
			assert.Equal(t, tc.wantName, resp.Image.GetUsername())
		})
	}

	t.Run("references served with one ID are one image", func(t *testing.T) {
		e := newEnv(t, fake.Options{Images: []string{}})
		refs := []string{"example.com/tags:1", "example.com/tags:2", "example.com/tags:3"}
		for i, ref := range refs {
			id := hex64('a')
			if i == 1 {
				id = "sha256:" + id // either spelling
			}
			e.rt.SetPullBehavior(ref, fake.PullBehavior{ID: id})
		}
		for _, ref := range refs {
			id, err := e.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: ref}, nil, nil)
			require.NoError(t, err)
			assert.Equal(t, "sha256:"+hex64('a'), id)
		}
		images, err := e.rt.ListImages(t.Context(), nil)
		require.NoError(t, err)
		require.Len(t, images, 1)
		assert.ElementsMatch(t, refs, images[0].RepoTags)
		assert.Equal(t, "sha256:"+hex64('a'), images[0].Spec.GetImage())

		require.NoError(t, e.rt.RemoveImage(t.Context(), &runtimeapi.ImageSpec{Image: images[0].Id}))
		images, err = e.rt.ListImages(t.Context(), nil)
		require.NoError(t, err)
		assert.Empty(t, images, "removing the ID removes every tag")
	})

	t.Run("an invalid scripted ID fails the pull", func(t *testing.T) {
		e := newEnv(t, fake.Options{Images: []string{}})
		e.rt.SetPullBehavior("example.com/app:1", fake.PullBehavior{ID: "sha256:nothex"})
		_, err := e.rt.PullImage(t.Context(), &runtimeapi.ImageSpec{Image: "example.com/app:1"}, nil, nil)
		require.ErrorIs(t, err, cri.ErrInvalidArgument)
		require.ErrorContains(t, err, "sha256:nothex")
	})
}

func TestAddImage(t *testing.T) {
	e := newEnv(t, fake.Options{Images: []string{"busybox"}})
	ctx := t.Context()
	require.ErrorIs(t, e.rt.AddImage(&runtimeapi.Image{}), cri.ErrInvalidArgument)
	require.NoError(t, e.rt.AddImage(&runtimeapi.Image{Id: "sha256:" + hex64('1'), RepoTags: []string{"busybox", "app:v1"}, Size: 5 << 20}))
	// busybox:latest moved to the new image, and the old one, left without
	// a reference, is gone, as in containerd.
	list, err := e.rt.ListImages(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, []string{"docker.io/library/busybox:latest", "docker.io/library/app:v1"}, list[0].RepoTags)
	assert.EqualValues(t, 5<<20, list[0].Size)

	info, err := e.rt.ImageFsInfo(ctx)
	require.NoError(t, err)
	require.Len(t, info.ImageFilesystems, 1)
	assert.EqualValues(t, 5<<20, info.ImageFilesystems[0].UsedBytes.Value)
	assert.Equal(t, nanos(0), info.ImageFilesystems[0].Timestamp)
	assert.NotEmpty(t, info.ImageFilesystems[0].FsId.Mountpoint)
}

func TestImageFsInfoSet(t *testing.T) {
	e := newEnv(t, fake.Options{})
	e.rt.SetImageFsInfo(&runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/images"}, UsedBytes: &runtimeapi.UInt64Value{Value: 42},
	}}})
	e.clk.Step(time.Minute)
	info, err := e.rt.ImageFsInfo(t.Context())
	require.NoError(t, err)
	require.Len(t, info.ImageFilesystems, 1)
	assert.EqualValues(t, 42, info.ImageFilesystems[0].UsedBytes.Value)
	assert.Equal(t, nanos(time.Minute), info.ImageFilesystems[0].Timestamp)
	assert.Empty(t, info.ContainerFilesystems)
}

// TestImageFsInfoSplit: with SetFilesystems naming two mountpoints, the
// image filesystem holds the images and the container filesystem the
// writable layers, which the containers' stats name too; removing a
// container frees its layer.
func TestImageFsInfoSplit(t *testing.T) {
	e := newEnv(t, fake.Options{Images: []string{"busybox"}})
	e.rt.SetFilesystems(fake.Filesystems{Images: "/mnt/images", Containers: "/var/lib/containers/storage"})
	id := e.run("layered")
	require.NoError(t, e.rt.SetContainerStats(id, &runtimeapi.ContainerStats{WritableLayer: &runtimeapi.FilesystemUsage{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containers/storage"}, UsedBytes: &runtimeapi.UInt64Value{Value: 5 << 20},
		InodesUsed: &runtimeapi.UInt64Value{Value: 7},
	}}))
	other := e.run("other")
	info, err := e.rt.ImageFsInfo(t.Context())
	require.NoError(t, err)
	require.Len(t, info.ImageFilesystems, 1)
	require.Len(t, info.ContainerFilesystems, 1)
	im, cf := info.ImageFilesystems[0], info.ContainerFilesystems[0]
	assert.Equal(t, "/mnt/images", im.FsId.Mountpoint)
	assert.EqualValues(t, 1<<20, im.UsedBytes.Value, "the image")
	assert.EqualValues(t, 1, im.InodesUsed.Value)
	assert.Equal(t, "/var/lib/containers/storage", cf.FsId.Mountpoint)
	assert.EqualValues(t, 5<<20, cf.UsedBytes.Value, "the writable layers")
	assert.EqualValues(t, 7, cf.InodesUsed.Value)
	assert.True(t, cri.SplitContainerFs(info))

	st, err := e.rt.ContainerStats(t.Context(), other)
	require.NoError(t, err)
	assert.Equal(t, "/var/lib/containers/storage", st.WritableLayer.FsId.Mountpoint, "a layer names its filesystem")

	require.NoError(t, e.rt.StopContainer(t.Context(), id, 0))
	require.NoError(t, e.rt.RemoveContainer(t.Context(), id))
	info, err = e.rt.ImageFsInfo(t.Context())
	require.NoError(t, err)
	assert.Zero(t, info.ContainerFilesystems[0].UsedBytes.Value, "the removed container's layer is gone")

	e.rt.SetFilesystems(fake.Filesystems{})
	info, err = e.rt.ImageFsInfo(t.Context())
	require.NoError(t, err)
	assert.False(t, cri.SplitContainerFs(info), "one filesystem again")
}
