package fake_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestContainerLifecycle(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	sb, sbCfg := e.runPod("web")
	sbCfg.LogDirectory = t.TempDir()
	cfg := containerConfig("app", "busybox", "sleep", "3600")
	cfg.Metadata.Attempt = 2
	cfg.Annotations = map[string]string{"io.kubernetes.container.hash": "abc"}
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/var/lib/data", Readonly: true}}
	cfg.LogPath = "app/2.log"
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 64 << 20}}

	e.clk.Step(time.Second)
	id := e.create(sb, sbCfg, cfg)
	st := e.status(id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_CREATED, st.State)
	assert.Equal(t, nanos(time.Second), st.CreatedAt)
	assert.Zero(t, st.StartedAt)
	assert.Zero(t, st.FinishedAt)
	assert.True(t, proto.Equal(cfg.Metadata, st.Metadata))
	assert.Equal(t, cfg.Labels, st.Labels)
	assert.Equal(t, cfg.Annotations, st.Annotations)
	assert.Equal(t, filepath.Join(sbCfg.LogDirectory, "app/2.log"), st.LogPath)
	require.Len(t, st.Mounts, 1)
	assert.True(t, proto.Equal(cfg.Mounts[0], st.Mounts[0]))
	assert.True(t, proto.Equal(cfg.Linux.Resources, st.Resources.Linux))
	assert.Equal(t, "docker.io/library/busybox:latest", st.Image.Image, "the image's repo tag, as containerd")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, st.ImageId)
	assert.Equal(t, st.ImageId, st.ImageRef, "no repo digest: the image ID")

	e.clk.Step(time.Second)
	require.NoError(t, e.rt.StartContainer(ctx, id))
	st = e.status(id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.State)
	assert.Equal(t, nanos(2*time.Second), st.StartedAt)

	update := &runtimeapi.LinuxContainerResources{CpuShares: 1024, MemoryLimitInBytes: 128 << 20}
	require.NoError(t, e.rt.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{Linux: update}))
	assert.True(t, proto.Equal(update, e.status(id).Resources.Linux))
	// As containerd: an update sets what it names and keeps the rest (a CPU
	// manager's cpuset alone keeps the limits).
	require.NoError(t, e.rt.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: "2-3"}}))
	assert.True(t, proto.Equal(&runtimeapi.LinuxContainerResources{CpuShares: 1024, MemoryLimitInBytes: 128 << 20, CpusetCpus: "2-3"}, e.status(id).Resources.Linux))

	e.clk.Step(time.Second)
	require.NoError(t, e.rt.StopContainer(ctx, id, 30))
	st = e.status(id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	assert.EqualValues(t, 143, st.ExitCode, "dies of SIGTERM")
	assert.Equal(t, "Error", st.Reason)
	assert.Equal(t, nanos(3*time.Second), st.FinishedAt)
	require.NoError(t, e.rt.StopContainer(ctx, id, 30), "stopping an exited container")

	list, err := e.rt.ListContainers(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	c := list[0]
	assert.Equal(t, id, c.Id)
	assert.Equal(t, sb, c.PodSandboxId)
	assert.Equal(t, "busybox", c.Image.Image, "the config's image spec, as containerd")
	assert.Equal(t, st.ImageId, c.ImageRef)
	assert.Equal(t, nanos(time.Second), c.CreatedAt)

	require.NoError(t, e.rt.RemoveContainer(ctx, id))
	_, err = e.rt.ContainerStatus(ctx, id, false)
	require.ErrorIs(t, err, cri.ErrNotFound)
	require.NoError(t, e.rt.RemoveContainer(ctx, id), "removing twice")
	// The name is free again.
	e.create(sb, sbCfg, cfg)
}

func TestContainerImageRefs(t *testing.T) {
	e := newEnv(t, fake.Options{Images: []string{"nginx@sha256:" + hex64('a')}})
	sb, cfg := e.runPod("web")
	id := e.create(sb, cfg, containerConfig("app", "docker.io/library/nginx@sha256:"+hex64('a')))
	st := e.status(id)
	assert.Equal(t, "docker.io/library/nginx@sha256:"+hex64('a'), st.ImageRef, "the repo digest, as containerd")
	assert.NotEqual(t, st.ImageRef, st.ImageId)

	// An image removed under a container: the config's spec and the ID.
	require.NoError(t, e.rt.RemoveImage(t.Context(), &runtimeapi.ImageSpec{Image: st.ImageId}))
	st = e.status(id)
	assert.Equal(t, st.ImageId, st.ImageRef)
	assert.Equal(t, "docker.io/library/nginx@sha256:"+hex64('a'), st.Image.Image)
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func TestContainerErrors(t *testing.T) {
	type fixture struct {
		e       *env
		sb      string
		sbCfg   *runtimeapi.PodSandboxConfig
		created string
		running string
		exited  string
	}
	setup := func(t *testing.T) *fixture {
		e := newEnv(t, fake.Options{})
		f := &fixture{e: e}
		f.sb, f.sbCfg = e.runPod("web")
		f.sbCfg.LogDirectory = t.TempDir()
		f.created = e.create(f.sb, f.sbCfg, containerConfig("created", "busybox"))
		f.running = e.create(f.sb, f.sbCfg, containerConfig("running", "busybox"))
		require.NoError(t, e.rt.StartContainer(t.Context(), f.running))
		f.exited = e.create(f.sb, f.sbCfg, containerConfig("exited", "busybox"))
		require.NoError(t, e.rt.StartContainer(t.Context(), f.exited))
		require.NoError(t, e.rt.StopContainer(t.Context(), f.exited, 0))
		return f
	}
	withLogPath := func(p string) *runtimeapi.ContainerConfig {
		c := containerConfig("logged", "busybox")
		c.LogPath = p
		return c
	}
	cases := []struct {
		name string
		call func(f *fixture) error
		want error
	}{
		{"create in a missing sandbox", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), "nope", containerConfig("a", "busybox"), f.sbCfg)
			return err
		}, cri.ErrNotFound},
		{"create in a stopped sandbox", func(f *fixture) error {
			sb, cfg := f.e.runPod("stopped")
			require.NoError(f.e.t, f.e.rt.StopPodSandbox(f.e.t.Context(), sb))
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), sb, containerConfig("a", "busybox"), cfg)
			return err
		}, cri.ErrFailedPrecondition},
		{"create with an image not pulled", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, containerConfig("a", "nginx"), f.sbCfg)
			return err
		}, cri.ErrNotFound},
		{"create with a group and no user", func(f *fixture) error {
			c := containerConfig("a", "busybox")
			c.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: &runtimeapi.Int64Value{Value: 1002}}}
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, c, f.sbCfg)
			return err
		}, cri.ErrInvalidArgument},
		{"create with a group and a user", func(f *fixture) error {
			c := containerConfig("a", "busybox")
			c.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				RunAsUser: &runtimeapi.Int64Value{Value: 1001}, RunAsGroup: &runtimeapi.Int64Value{Value: 1002}}}
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, c, f.sbCfg)
			return err
		}, nil},
		{"create with a group and a user name", func(f *fixture) error {
			c := containerConfig("a", "busybox")
			c.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				RunAsUsername: "nobody", RunAsGroup: &runtimeapi.Int64Value{Value: 1002}}}
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, c, f.sbCfg)
			return err
		}, nil},
		{"create with a reserved name", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, containerConfig("created", "busybox"), f.sbCfg)
			return err
		}, cri.ErrAlreadyExists},
		{"create the next attempt", func(f *fixture) error {
			c := containerConfig("created", "busybox")
			c.Metadata.Attempt = 1
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, c, f.sbCfg)
			return err
		}, nil},
		{"create without a name", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, containerConfig("", "busybox"), f.sbCfg)
			return err
		}, cri.ErrInvalidArgument},
		{"create without an image", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, containerConfig("a", ""), f.sbCfg)
			return err
		}, cri.ErrInvalidArgument},
		{"create with an absolute log path", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, withLogPath("/etc/passwd"), f.sbCfg)
			return err
		}, cri.ErrInvalidArgument},
		{"create with a log path leaving the directory", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, withLogPath("../../x.log"), f.sbCfg)
			return err
		}, cri.ErrInvalidArgument},
		{"create with a log path that stays inside", func(f *fixture) error {
			_, err := f.e.rt.CreateContainer(f.e.t.Context(), f.sb, withLogPath("a/../b.log"), f.sbCfg)
			return err
		}, nil},
		{"start a running container", func(f *fixture) error { return f.e.rt.StartContainer(f.e.t.Context(), f.running) }, cri.ErrFailedPrecondition},
		{"start an exited container", func(f *fixture) error { return f.e.rt.StartContainer(f.e.t.Context(), f.exited) }, cri.ErrFailedPrecondition},
		{"start a missing container", func(f *fixture) error { return f.e.rt.StartContainer(f.e.t.Context(), "nope") }, cri.ErrNotFound},
		{"status of a missing container", func(f *fixture) error {
			_, err := f.e.rt.ContainerStatus(f.e.t.Context(), "nope", false)
			return err
		}, cri.ErrNotFound},
		{"status by unique prefix", func(f *fixture) error {
			_, err := f.e.rt.ContainerStatus(f.e.t.Context(), uniquePrefix(f.created, f.running, f.exited), false)
			return err
		}, nil},
		{"stop a missing container", func(f *fixture) error { return f.e.rt.StopContainer(f.e.t.Context(), "nope", 10) }, nil},
		{"stop with an empty ID", func(f *fixture) error { return f.e.rt.StopContainer(f.e.t.Context(), "", 10) }, cri.ErrInvalidArgument},
		{"stop a created container", func(f *fixture) error { return f.e.rt.StopContainer(f.e.t.Context(), f.created, 10) }, nil},
		{"remove a missing container", func(f *fixture) error { return f.e.rt.RemoveContainer(f.e.t.Context(), "nope") }, nil},
		{"remove with an empty ID", func(f *fixture) error { return f.e.rt.RemoveContainer(f.e.t.Context(), "") }, cri.ErrInvalidArgument},
		{"update an exited container", func(f *fixture) error {
			return f.e.rt.UpdateContainerResources(f.e.t.Context(), f.exited, &runtimeapi.ContainerResources{})
		}, cri.ErrFailedPrecondition},
		{"update a missing container", func(f *fixture) error {
			return f.e.rt.UpdateContainerResources(f.e.t.Context(), "nope", &runtimeapi.ContainerResources{})
		}, cri.ErrNotFound},
		{"reopen the log of a created container", func(f *fixture) error { return f.e.rt.ReopenContainerLog(f.e.t.Context(), f.created) }, cri.ErrFailedPrecondition},
		{"reopen the log of a running container", func(f *fixture) error { return f.e.rt.ReopenContainerLog(f.e.t.Context(), f.running) }, nil},
		{"reopen the log of a missing container", func(f *fixture) error { return f.e.rt.ReopenContainerLog(f.e.t.Context(), "nope") }, cri.ErrNotFound},
		{"exit a created container", func(f *fixture) error { return f.e.rt.ExitContainer(f.created, 1, "") }, cri.ErrFailedPrecondition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(setup(t))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestContainerAmbiguousPrefix(t *testing.T) {
	e := newEnv(t, fake.Options{})
	sb, cfg := e.runPod("web")
	seen := map[byte]bool{}
	for i := 0; ; i++ {
		id := e.create(sb, cfg, containerConfig(fmt.Sprint("c", i), "busybox"))
		if seen[id[0]] {
			_, err := e.rt.ContainerStatus(t.Context(), id[:1], false)
			require.ErrorIs(t, err, cri.ErrInvalidArgument)
			assert.ErrorContains(t, err, "ambiguous")
			require.Error(t, e.rt.RemoveContainer(t.Context(), id[:1]), "an ambiguous removal is not silently ignored")
			list, err := e.rt.ListContainers(t.Context(), &runtimeapi.ContainerFilter{Id: id[:1]})
			require.NoError(t, err)
			assert.Empty(t, list, "containerd matches nothing for an ambiguous prefix")
			return
		}
		seen[id[0]] = true
	}
}

func TestListContainersFilters(t *testing.T) {
	e := newEnv(t, fake.Options{})
	ctx := t.Context()
	sbA, cfgA := e.runPod("a")
	sbB, cfgB := e.runPod("b")
	a1 := e.create(sbA, cfgA, containerConfig("one", "busybox"))
	a2 := e.create(sbA, cfgA, containerConfig("two", "busybox"))
	b1 := e.create(sbB, cfgB, containerConfig("one", "busybox"))
	require.NoError(t, e.rt.StartContainer(ctx, a2))
	require.NoError(t, e.rt.StartContainer(ctx, b1))
	require.NoError(t, e.rt.StopContainer(ctx, b1, 0))
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	cases := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"nil", nil, []string{a1, a2, b1}},
		{"id", &runtimeapi.ContainerFilter{Id: a2}, []string{a2}},
		{"id prefix", &runtimeapi.ContainerFilter{Id: uniquePrefix(a2, a1, b1)}, []string{a2}},
		{"unknown id", &runtimeapi.ContainerFilter{Id: "zz"}, nil},
		{"sandbox", &runtimeapi.ContainerFilter{PodSandboxId: sbA}, []string{a1, a2}},
		{"sandbox prefix", &runtimeapi.ContainerFilter{PodSandboxId: uniquePrefix(sbB, sbA)}, []string{b1}},
		{"unknown sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "zz"}, nil},
		{"id in another sandbox", &runtimeapi.ContainerFilter{Id: a1, PodSandboxId: sbB}, nil},
		{"created", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_CREATED)}, []string{a1}},
		{"running", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_RUNNING)}, []string{a2}},
		{"exited", &runtimeapi.ContainerFilter{State: state(runtimeapi.ContainerState_CONTAINER_EXITED)}, []string{b1}},
		{"label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "one"}}, []string{a1, b1}},
		{"label and sandbox", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "one"}, PodSandboxId: sbB}, []string{b1}},
		{"two labels", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "one", "x": "y"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.rt.ListContainers(ctx, tc.filter)
			require.NoError(t, err)
			var ids []string
			for _, c := range got {
				ids = append(ids, c.Id)
			}
			assert.Equal(t, tc.want, ids)
		})
	}
}

func TestExitContainer(t *testing.T) {
	e := newEnv(t, fake.Options{})
	id := e.run("app")
	e.clk.Step(time.Minute)
	require.NoError(t, e.rt.ExitContainer(id, 2, ""))
	st := e.status(id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
	assert.EqualValues(t, 2, st.ExitCode)
	assert.Equal(t, "Error", st.Reason)
	assert.Equal(t, nanos(time.Minute), st.FinishedAt)
	assert.Empty(t, e.rt.CallsOf(fake.StopContainer), "not a CRI call")
}
