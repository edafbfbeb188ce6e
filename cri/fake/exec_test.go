package fake_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestExecSyncDefaults(t *testing.T) {
	e := newEnv(t, fake.Options{})
	id := e.run("app")
	cases := []struct {
		cmd    []string
		stdout string
		code   int32
	}{
		{[]string{"echo", "hello", "world"}, "hello world\n", 0},
		{[]string{"/bin/echo"}, "\n", 0},
		{[]string{"echo", "-n", "ready"}, "ready", 0},
		{[]string{"sh", "-c", "echo hello   world"}, "hello world\n", 0},
		{[]string{"/bin/bash", "-c", "echo ok"}, "ok\n", 0},
		{[]string{"sh", "-c", "echo a > /tmp/x"}, "", 0},
		{[]string{"sh", "-c", "echo 'quoted'   \"words\""}, "quoted words\n", 0},
		{[]string{"sh", "-c", "echo $HOME"}, "", 0},
		{[]string{"sh", "-c", "echo a; false && echo b || echo c"}, "a\nc\n", 0},
		{[]string{"sh", "-c", "true && exit 3; echo never"}, "", 3},
		{[]string{"sh", "-c", "if true; then echo x; fi"}, "", 0},
		{[]string{"true"}, "", 0},
		{[]string{"/bin/false"}, "", 1},
		{[]string{"sh", "-c", "false"}, "", 1},
		{[]string{"sh", "-c", "exit 300"}, "", 44},
		{[]string{"sh", "-c", "FOO=1 env"}, "", 0},
		{[]string{"sh", "-c", "echo a &&"}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.cmd[len(tc.cmd)-1], func(t *testing.T) {
			resp, err := e.rt.ExecSync(t.Context(), id, tc.cmd, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.stdout, string(resp.Stdout))
			assert.Empty(t, resp.Stderr)
			assert.Equal(t, tc.code, resp.ExitCode)
		})
	}
}

// cat reads files as the container sees them: through its mounts.
func TestExecSyncCatReadsThroughMounts(t *testing.T) {
	e := newEnv(t, fake.Options{})
	vol, secret, outside := t.TempDir(), t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(vol, "greeting"), []byte("hello\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(vol, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(secret, "token"), []byte("s3cr3t"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "host"), []byte("host file"), 0o644))
	// The atomic writer's layout: a relative link inside the volume is
	// followed; an absolute one out of it is not.
	require.NoError(t, os.Symlink("greeting", filepath.Join(vol, "alias")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "host"), filepath.Join(vol, "escape")))

	sb, cfg := e.runPod("pod-cat")
	cc := containerConfig("app", "busybox", "sleep", "3600")
	cc.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/etc/config", HostPath: vol},
		{ContainerPath: "/etc/config/secret", HostPath: secret},
	}
	id := e.create(sb, cfg, cc)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))

	cases := []struct {
		argv           []string
		stdout, stderr string
		code           int32
	}{
		{[]string{"cat", "/etc/config/greeting"}, "hello\n", "", 0},
		{[]string{"/bin/cat", "/etc/config/alias", "/etc/config/secret/token"}, "hello\ns3cr3t", "", 0},
		{[]string{"cat", "/etc/config/../config/greeting"}, "hello\n", "", 0},
		{[]string{"cat", "/etc/hostname"}, "", "", 0}, // no mount: the default, no output
		{[]string{"cat", "/etc/config/missing"}, "", "cat: can't open '/etc/config/missing': No such file or directory\n", 1},
		{[]string{"cat", "/etc/config/escape"}, "", "cat: can't open '/etc/config/escape': No such file or directory\n", 1},
		{[]string{"cat", "/etc/config/sub"}, "", "cat: read error: Is a directory\n", 1},
	}
	for _, tc := range cases {
		t.Run(tc.argv[len(tc.argv)-1], func(t *testing.T) {
			resp, err := e.rt.ExecSync(t.Context(), id, tc.argv, 0)
			require.NoError(t, err)
			assert.Equal(t, tc.stdout, string(resp.Stdout))
			assert.Equal(t, tc.stderr, string(resp.Stderr))
			assert.Equal(t, tc.code, resp.ExitCode)
		})
	}
}

func TestExecSyncRules(t *testing.T) {
	e := newEnv(t, fake.Options{
		Images: []string{"busybox", "nginx"},
		ExecRules: []fake.ExecRule{
			{Image: "nginx", CommandPrefix: []string{"nginx", "-t"}, Stderr: "syntax is ok\n"},
			{Name: "db", Command: []string{"pg_isready"}, Stdout: "accepting connections\n"},
			{Command: []string{"cat", "/tmp/healthy"}, ExitCode: 1, Stderr: "No such file or directory\n"},
			{CommandPrefix: []string{"echo"}, Stdout: "scripted\n"},
		},
	})
	sb, cfg := e.runPod("web")
	start := func(name, image string) string {
		id := e.create(sb, cfg, containerConfig(name, image))
		require.NoError(t, e.rt.StartContainer(t.Context(), id))
		return id
	}
	web, db := start("web", "nginx"), start("db", "busybox")
	cases := []struct {
		name           string
		id             string
		cmd            []string
		stdout, stderr string
		code           int32
	}{
		{"image and prefix", web, []string{"nginx", "-t", "-q"}, "", "syntax is ok\n", 0},
		{"image does not match", db, []string{"nginx", "-t"}, "", "", 0},
		{"name", db, []string{"pg_isready"}, "accepting connections\n", "", 0},
		{"name does not match", web, []string{"pg_isready"}, "", "", 0},
		{"non-zero exit", web, []string{"cat", "/tmp/healthy"}, "", "No such file or directory\n", 1},
		{"a rule beats the default", web, []string{"echo", "hi"}, "scripted\n", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := e.rt.ExecSync(t.Context(), tc.id, tc.cmd, time.Second)
			require.NoError(t, err)
			assert.Equal(t, tc.stdout, string(resp.Stdout))
			assert.Equal(t, tc.stderr, string(resp.Stderr))
			assert.Equal(t, tc.code, resp.ExitCode)
		})
	}

	t.Run("SetExecRules replaces them", func(t *testing.T) {
		e.rt.SetExecRules(nil)
		resp, err := e.rt.ExecSync(t.Context(), db, []string{"echo", "hi"}, 0)
		require.NoError(t, err)
		assert.Equal(t, "hi\n", string(resp.Stdout))
	})
}

func TestExecSyncDuration(t *testing.T) {
	rules := []fake.ExecRule{{Command: []string{"slow"}, Stdout: "done\n", Duration: 5 * time.Second}}
	cases := []struct {
		name    string
		timeout time.Duration
		step    time.Duration // the step that ends the call
		wantErr error
	}{
		{"within the timeout", 10 * time.Second, 5 * time.Second, nil},
		{"no timeout", 0, 5 * time.Second, nil},
		{"longer than the timeout", 2 * time.Second, 2 * time.Second, cri.ErrTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{ExecRules: rules})
			id := e.run("app")
			type result struct {
				resp *runtimeapi.ExecSyncResponse
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := e.rt.ExecSync(t.Context(), id, []string{"slow"}, tc.timeout)
				done <- result{resp, err}
			}()
			waitUntil(t, "the exec waits on the clock", e.clk.HasWaiters)
			e.clk.Step(tc.step - time.Millisecond)
			pending(t, done)
			e.clk.Step(time.Millisecond)
			res := receive(t, done)
			if tc.wantErr != nil {
				require.ErrorIs(t, res.err, tc.wantErr)
				return
			}
			require.NoError(t, res.err)
			assert.Equal(t, "done\n", string(res.resp.Stdout))
		})
	}

	t.Run("ctx ends first", func(t *testing.T) {
		e := newEnv(t, fake.Options{ExecRules: rules})
		id := e.run("app")
		ctx, cancel := context.WithCancel(t.Context())
		done := async(func() error {
			_, err := e.rt.ExecSync(ctx, id, []string{"slow"}, 0)
			return err
		})
		waitUntil(t, "the exec waits on the clock", e.clk.HasWaiters)
		cancel()
		require.ErrorIs(t, receive(t, done), context.Canceled)
	})
}

func TestExecSyncErrors(t *testing.T) {
	e := newEnv(t, fake.Options{})
	sb, cfg := e.runPod("web")
	created := e.create(sb, cfg, containerConfig("created", "busybox"))
	running := e.run("running")
	cases := []struct {
		name string
		id   string
		cmd  []string
		want error
	}{
		{"unknown container", "nope", []string{"true"}, cri.ErrNotFound},
		{"container not running", created, []string{"true"}, cri.ErrFailedPrecondition},
		{"empty command", running, nil, cri.ErrInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.rt.ExecSync(t.Context(), tc.id, tc.cmd, 0)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestStreamingIsUnimplemented(t *testing.T) {
	e := newEnv(t, fake.Options{})
	id := e.run("app")
	ctx := t.Context()
	_, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdout: true})
	require.ErrorIs(t, err, cri.ErrUnimplemented)
	assert.ErrorContains(t, err, "no streaming server")
	_, err = e.rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id})
	require.ErrorIs(t, err, cri.ErrUnimplemented)
	_, err = e.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "x", Port: []int32{80}})
	require.ErrorIs(t, err, cri.ErrUnimplemented)
	assert.Len(t, e.rt.CallsOf(fake.Exec), 1)
}
