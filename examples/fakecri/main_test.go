package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// spdystream's Connection.Close hands its close error to a CloseWait that
// the streaming library never calls, in a goroutine that gives up after one
// second (real time): when both ends close a streaming connection, as they
// do at the end of every session, the second one's goroutine outlives the
// test by up to that second. It always ends; everything else must not leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}

func TestDefaultConfigParses(t *testing.T) {
	c, err := loadConfig("")
	require.NoError(t, err)
	opts := c.options()
	assert.Contains(t, opts.Images, "docker.io/local/pause:1")
	assert.NotEmpty(t, opts.Rules)
	assert.NotEmpty(t, opts.ExecRules)
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", "imagez: [a]", `unknown field "imagez"`},
		{"bad outcome", "containers:\n- outcome: explode", `containers[0]: unknown outcome "explode"`},
		{"bad sigterm", "containers:\n- onSIGTERM: shrug", `containers[0]: unknown onSIGTERM "shrug"`},
		{"bad duration", "containers:\n- runFor: soon", `time: invalid duration "soon"`},
		{"negative duration", "exec:\n- duration: -1s", `duration "-1s" is negative`},
		{"pull without image", "pulls:\n- latency: 1s", "pulls[0]: image is required"},
		{"bad pull id", "pulls:\n- image: a\n  id: sha256:abc", `pulls[0]: id "sha256:abc"`},
		{"logEvery without logRepeat", "containers:\n- logEvery: 1s", "containers[0]: logEvery and logRepeat"},
		{"logRepeat without logEvery", "containers:\n- logRepeat: 3", "containers[0]: logEvery and logRepeat"},
		{"negative logRepeat", "containers:\n- logEvery: 1s\n  logRepeat: -1", "containers[0]: logEvery and logRepeat"},
		{"unknown cgroup driver", "cgroupDriver: lxcfs", `unknown cgroupDriver "lxcfs"`},
		{"not yaml", "containers: [", "script.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig("script.yaml", []byte(tt.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "script.yaml")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestConfigScriptsTheRuntime(t *testing.T) {
	c, err := parseConfig("s.yaml", []byte(`
images: [busybox]
containers:
- name: app
  outcome: exit
  exitCode: 3
- name: loop
  stdout: [tick]
  logEvery: 1s
  logRepeat: 2
pulls:
- image: nginx
  error: no such image
- image: example.com/app:1
  id: sha256:`+strings.Repeat("ab", 32)+`
  user: "1002:1002"
`))
	require.NoError(t, err)
	rt := fake.New(c.options())
	defer rt.Close()
	c.apply(rt)
	ctx := context.Background()

	_, err = rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil)
	assert.ErrorContains(t, err, "no such image")

	sbConfig := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "n", Uid: "u"}}
	sb, err := rt.RunPodSandbox(ctx, sbConfig, "")
	require.NoError(t, err)
	id, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
	}, sbConfig)
	require.NoError(t, err)
	require.NoError(t, rt.StartContainer(ctx, id))
	st, err := rt.ContainerStatus(ctx, id, false)
	require.NoError(t, err)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.Status.State)
	assert.EqualValues(t, 3, st.Status.ExitCode)

	imgID, err := rt.PullImage(ctx, &runtimeapi.ImageSpec{Image: "example.com/app:1"}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "sha256:"+strings.Repeat("ab", 32), imgID)
	img, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imgID}, false)
	require.NoError(t, err)
	assert.EqualValues(t, 1002, img.Image.GetUid().GetValue())

	opts := c.options()
	assert.Equal(t, fake.Behavior{Stdout: []string{"tick"}, LogEvery: time.Second, LogRepeat: 2}, opts.Rules[1].Behavior)
}

// cgroupDriver scripts RuntimeConfig: the driver containerd 2.x reports,
// or Unimplemented as containerd 1.6 answers.
func TestConfigCgroupDriver(t *testing.T) {
	for _, tc := range []struct {
		script  string
		want    runtimeapi.CgroupDriver
		wantErr error
	}{
		{"", runtimeapi.CgroupDriver_CGROUPFS, nil},
		{"cgroupDriver: systemd", runtimeapi.CgroupDriver_SYSTEMD, nil},
		{"cgroupDriver: unimplemented", 0, cri.ErrUnimplemented},
	} {
		t.Run(tc.script, func(t *testing.T) {
			c, err := parseConfig("s.yaml", []byte(tc.script))
			require.NoError(t, err)
			rt := fake.New(c.options())
			defer rt.Close()
			c.apply(rt)
			resp, err := rt.RuntimeConfig(context.Background())
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, resp.GetLinux().GetCgroupDriver())
		})
	}
}

func TestRunServesUntilCanceled(t *testing.T) {
	dir, err := os.MkdirTemp("", "fakecri")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")

	ctx, cancel := context.WithCancel(context.Background())
	var logs bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--listen", endpoint, "--quiet"}, &logs) }()

	// The socket appears once run has listened; wait for it with a deadline.
	var c *cri.Client
	deadline := time.Now().Add(10 * time.Second)
	for c == nil {
		c, err = cri.Dial(ctx, endpoint, cri.DialOptions{})
		if err != nil {
			require.True(t, time.Now().Before(deadline), "fakecri did not serve: %v", err)
			time.Sleep(10 * time.Millisecond)
		}
	}
	assert.Equal(t, fake.DefaultRuntimeName, c.RuntimeVersion().RuntimeName)
	img, err := c.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "docker.io/local/busybox:1"}, false)
	require.NoError(t, err)
	assert.NotNil(t, img.Image, "the default script preloads the local busybox")
	require.NoError(t, c.Close())

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its ctx ended")
	}
	_, err = os.Stat(filepath.Join(dir, "cri.sock"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed")
}
