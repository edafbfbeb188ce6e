package fake_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// exec asks the runtime for an exec URL and opens the session.
func (e *streamEnv) exec(id string, req *runtimeapi.ExecRequest) *session {
	e.t.Helper()
	req.ContainerId = id
	resp, err := e.rt.Exec(e.t.Context(), req)
	require.NoError(e.t, err)
	require.True(e.t, strings.HasPrefix(resp.Url, e.srv.URL()), "%s is on %s", resp.Url, e.srv.URL())
	return open(e.t, resp.Url, sessionOpts{stdin: req.Stdin, stdout: req.Stdout, stderr: req.Stderr, tty: req.Tty})
}

func TestStreamingExec(t *testing.T) {
	e := newStreamEnv(t, fake.Options{ExecRules: []fake.ExecRule{
		{Command: []string{"check"}, Stdout: "checked\n", Stderr: "warning\n", ExitCode: 3},
	}})
	id := e.run("app")
	cases := []struct {
		name           string
		cmd            []string
		stdin          string // sent, then closed; "" sends no stdin
		tty            bool
		stdout, stderr string
		code           int
	}{
		{name: "echo", cmd: []string{"echo", "hello", "world"}, stdout: "hello world\n"},
		{name: "critest's echo", cmd: []string{"echo", "-n", "hello"}, stdout: "hello"},
		{name: "a rule: output and exit code", cmd: []string{"check"}, stdout: "checked\n", stderr: "warning\n", code: 3},
		{name: "sh -c", cmd: []string{"sh", "-c", "echo 'a  b'; false || echo \"c\" && exit 4"}, stdout: "a  b\nc\n", code: 4},
		{name: "cat echoes stdin", cmd: []string{"cat"}, stdin: "line 1\nline 2", stdout: "line 1\nline 2"},
		{name: "a shell reads stdin", cmd: []string{"sh"}, stdin: "echo one\nexit 7\necho never\n", stdout: "one\n", code: 7},
		{name: "unsupported syntax on stdin", cmd: []string{"/bin/sh"}, stdin: "echo $HOME\n", stderr: "sh: syntax not supported by the fake runtime\n", code: 2},
		{name: "tty: CRLF", cmd: []string{"echo", "a"}, tty: true, stdout: "a\r\n"},
		{name: "tty with critest's echo", cmd: []string{"echo", "-n", "hello"}, tty: true, stdout: "hello"},
		{name: "unknown command", cmd: []string{"ls", "/"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := &runtimeapi.ExecRequest{Cmd: tc.cmd, Stdin: tc.stdin != "", Stdout: true, Stderr: !tc.tty, Tty: tc.tty}
			s := e.exec(id, req)
			if tc.stdin != "" {
				s.send(tc.stdin)
				s.closeStdin()
			}
			st := s.wait()
			assert.Equal(t, tc.code, st.exitCode(), "status %+v", st)
			assert.Equal(t, tc.stdout, s.stdout.String())
			assert.Equal(t, tc.stderr, s.stderr.String())
		})
	}
}

// An interactive shell on a terminal, as `kubectl exec -it POD -- sh` runs
// it: a prompt, echo of what is typed, line editing, Ctrl-C, exit.
func TestStreamingExecTerminal(t *testing.T) {
	e := newStreamEnv(t, fake.Options{})
	id := e.run("app")
	s := e.exec(id, &runtimeapi.ExecRequest{Cmd: []string{"sh"}, Stdin: true, Stdout: true, Tty: true})
	s.stdout.waitFor(t, "/ # ")
	s.send("echo hx\x7fi\r")
	s.stdout.waitFor(t, "echo hx\b \bi\r\nhi\r\n/ # ")
	s.send("echo lost\x03")
	s.stdout.waitFor(t, "echo lost^C\r\n/ # ")
	s.send("cat\r")
	s.send("typed\r")
	s.stdout.waitFor(t, "cat\r\ntyped\r\ntyped\r\n")
	s.send("\x04") // Ctrl-D ends cat's input, not the shell's
	s.stdout.waitFor(t, "typed\r\n/ # ")
	s.send("exit 5\r")
	assert.Equal(t, 5, s.wait().exitCode())
}

// A command runs until the container stops, which kills it (137).
func TestStreamingExecKilledWithItsContainer(t *testing.T) {
	e := newStreamEnv(t, fake.Options{ExecRules: []fake.ExecRule{{Command: []string{"sleep", "60"}, Duration: time.Minute}}})
	id := e.run("app")
	s := e.exec(id, &runtimeapi.ExecRequest{Cmd: []string{"sleep", "60"}, Stdout: true})
	waitUntil(t, "the command waits on the clock", e.clk.HasWaiters)
	require.NoError(t, e.rt.StopContainer(t.Context(), id, 0))
	assert.Equal(t, 137, s.wait().exitCode())
}

// kubectl cp: a tar archive sent to "tar xmf - -C DIR" lands among the
// container's own files, where cat, test and "tar cf -" find it.
func TestStreamingExecCopy(t *testing.T) {
	e := newStreamEnv(t, fake.Options{})
	vol := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(vol, "conf"), []byte("from the volume\n"), 0o644))
	sb, cfg := e.runPod("pod-cp")
	cc := containerConfig("app", "busybox", "sleep", "3600")
	cc.Mounts = []*runtimeapi.Mount{{ContainerPath: "/etc/app", HostPath: vol}}
	id := e.create(sb, cfg, cc)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))

	execOut := func(stdin []byte, cmd ...string) (string, string, int) {
		t.Helper()
		s := e.exec(id, &runtimeapi.ExecRequest{Cmd: cmd, Stdin: stdin != nil, Stdout: true, Stderr: true})
		if stdin != nil {
			_, err := s.stdin.Write(stdin)
			require.NoError(t, err)
			s.closeStdin()
		}
		code := s.wait().exitCode()
		return s.stdout.String(), s.stderr.String(), code
	}

	// kubectl cp ./site POD:/srv: /srv is not a directory yet, so the
	// archive's top entry is renamed to srv and extracted in /.
	_, _, code := execOut(nil, "test", "-d", "/srv")
	assert.Equal(t, 1, code)
	archive := tarball(t, map[string]string{"srv/": "", "srv/index.html": "<h1>hi</h1>\n", "srv/css/site.css": "body{}\n"})
	_, stderr, code := execOut(archive, "tar", "--no-same-permissions", "--no-same-owner", "-xmf", "-", "-C", "/")
	require.Equal(t, 0, code, stderr)
	_, _, code = execOut(nil, "test", "-d", "/srv")
	assert.Equal(t, 0, code)
	stdout, _, _ := execOut(nil, "cat", "/srv/index.html")
	assert.Equal(t, "<h1>hi</h1>\n", stdout)

	// kubectl cp POD:/srv ./out runs "tar cf - /srv".
	stdout, stderr, code = execOut(nil, "tar", "cf", "-", "/srv")
	require.Equal(t, 0, code)
	assert.Equal(t, "tar: removing leading '/' from member names\n", stderr)
	assert.Equal(t, map[string]string{"srv/": "", "srv/css/": "", "srv/css/site.css": "body{}\n", "srv/index.html": "<h1>hi</h1>\n"}, untar(t, stdout))

	// Through a mount, tar reads the host's files; it never writes them.
	stdout, _, code = execOut(nil, "tar", "cf", "-", "-C", "/etc", "app")
	require.Equal(t, 0, code)
	assert.Equal(t, map[string]string{"app/": "", "app/conf": "from the volume\n"}, untar(t, stdout))
	_, stderr, code = execOut(tarball(t, map[string]string{"app/x": "x"}), "tar", "xf", "-", "-C", "/etc")
	assert.Equal(t, 1, code)
	assert.Equal(t, "tar: can't open 'app/x': the fake runtime does not write to mounts\n", stderr)
	_, err := os.Stat(filepath.Join(vol, "x"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestStreamingAttach(t *testing.T) {
	t.Run("a shell on stdin, StdinOnce", func(t *testing.T) {
		// critest's attach: /bin/sh with stdin, attached with stdin, stdout
		// and stderr; what the client writes runs, and closing it ends the
		// shell, the container and the session.
		e := newStreamEnv(t, fake.Options{})
		sb, cfg := e.runPod("pod-sh")
		cc := containerConfig("sh", "busybox", "/bin/sh")
		cc.Stdin, cc.StdinOnce = true, true
		cc.LogPath = "sh.log"
		cfg.LogDirectory = t.TempDir()
		id := e.create(sb, cfg, cc)
		require.NoError(t, e.rt.StartContainer(t.Context(), id))
		s := e.attach(id, true, true, false)
		s.send("echo oops >&2\n")
		s.stderr.waitFor(t, "sh: syntax not supported by the fake runtime\n")
		s.send("echo -n hello\n")
		s.stdout.waitFor(t, "hello")
		s.closeStdin()
		assert.Equal(t, 0, s.wait().exitCode())
		assert.Equal(t, "hello", s.stdout.String())
		st := e.status(id)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
		assert.EqualValues(t, 0, st.ExitCode)
		log, err := os.ReadFile(filepath.Join(cfg.LogDirectory, "sh.log"))
		require.NoError(t, err)
		assert.Contains(t, string(log), " stdout F hello\n")
		assert.Contains(t, string(log), " stderr F sh: syntax not supported by the fake runtime\n")
	})

	t.Run("stdin kept open: the session ends, the container runs", func(t *testing.T) {
		e := newStreamEnv(t, fake.Options{})
		sb, cfg := e.runPod("pod-cat")
		cc := containerConfig("cat", "busybox", "cat")
		cc.Stdin = true
		id := e.create(sb, cfg, cc)
		require.NoError(t, e.rt.StartContainer(t.Context(), id))
		s := e.attach(id, true, true, false)
		s.send("ping\n")
		s.stdout.waitFor(t, "ping\n")
		s.closeStdin()
		assert.Equal(t, 0, s.wait().exitCode())
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.status(id).State)
	})

	t.Run("a terminal: echo, prompt, Ctrl-D exits", func(t *testing.T) {
		e := newStreamEnv(t, fake.Options{})
		sb, cfg := e.runPod("pod-tty")
		cc := containerConfig("sh", "busybox", "sh")
		cc.Stdin, cc.Tty = true, true
		id := e.create(sb, cfg, cc)
		require.NoError(t, e.rt.StartContainer(t.Context(), id))
		s := e.attach(id, true, false, true)
		s.send("\r")
		s.stdout.waitFor(t, "\r\n/ # ")
		s.send("echo hi\r")
		s.stdout.waitFor(t, "echo hi\r\nhi\r\n/ # ")
		s.send("\x04")
		assert.Equal(t, 0, s.wait().exitCode())
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, e.status(id).State)
	})

	t.Run("output: the scripted log lines, until the container stops", func(t *testing.T) {
		e := newStreamEnv(t, fake.Options{Rules: []fake.Rule{{Name: "ticker", Behavior: fake.Behavior{
			Stdout: []string{"tick"}, Stderr: []string{"tock"}, LogEvery: time.Second, LogRepeat: 5,
			Outcome: fake.Exit, RunFor: 2500 * time.Millisecond, ExitCode: 1,
		}}}})
		sb, cfg := e.runPod("pod-ticker")
		cfg.LogDirectory = t.TempDir()
		cc := containerConfig("ticker", "busybox", "cat")
		cc.LogPath, cc.Stdin = "ticker.log", true
		id := e.create(sb, cfg, cc)
		require.NoError(t, e.rt.StartContainer(t.Context(), id))
		s := e.attach(id, true, true, false)
		// cat echoes what the session sends once it is attached; the lines
		// written before it attached are not replayed.
		s.send("ping\n")
		s.stdout.waitFor(t, "ping\n")
		e.clk.Step(time.Second)
		s.stdout.waitFor(t, "ping\ntick\n")
		s.stderr.waitFor(t, "tock\n")
		e.clk.Step(time.Second)
		e.clk.Step(time.Second) // the container exits at 2.5s
		assert.Equal(t, 0, s.wait().exitCode())
		assert.Equal(t, "ping\ntick\ntick\n", s.stdout.String())
		assert.Equal(t, "tock\ntock\n", s.stderr.String())
		assert.EqualValues(t, 1, e.status(id).ExitCode)
	})
}

// attach asks the runtime for an attach URL and opens the session.
func (e *streamEnv) attach(id string, stdin, stderr, tty bool) *session {
	e.t.Helper()
	resp, err := e.rt.Attach(e.t.Context(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: stdin, Stdout: true, Stderr: stderr, Tty: tty})
	require.NoError(e.t, err)
	return open(e.t, resp.Url, sessionOpts{stdin: stdin, stdout: true, stderr: stderr, tty: tty})
}

func TestStreamingPortForward(t *testing.T) {
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer backend.Close()
	served := async(func() error {
		c, err := backend.Accept()
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = io.WriteString(c, "HTTP/1.0 200 OK\r\n\r\nserved by the backend\n")
		return err
	})

	e := newStreamEnv(t, fake.Options{Images: []string{"busybox", "nginx"}, PortRules: []fake.PortRule{
		{Port: 7, Handler: fake.EchoPort},
		{Image: "nginx", Port: 80, Address: backend.Addr().String()},
	}})
	sb, cfg := e.runPod("web")
	id := e.create(sb, cfg, containerConfig("nginx", "nginx"))
	require.NoError(t, e.rt.StartContainer(t.Context(), id))
	// Each session (kubectl port-forward run) asks for a URL of its own.
	forwardTo := func(port int32) (data, errs io.ReadWriteCloser, err error) {
		resp, err := e.rt.PortForward(t.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sb[:12], Port: []int32{port}})
		require.NoError(t, err)
		return forward(t, resp.Url, port)
	}

	t.Run("an in-process handler", func(t *testing.T) {
		data, _, err := forwardTo(7)
		require.NoError(t, err)
		_, err = io.WriteString(data, "echo me")
		require.NoError(t, err)
		buf := make([]byte, len("echo me"))
		_, err = io.ReadFull(data, buf)
		require.NoError(t, err)
		assert.Equal(t, "echo me", string(buf))
	})
	t.Run("a real address", func(t *testing.T) {
		data, _, err := forwardTo(80)
		require.NoError(t, err)
		_, err = io.WriteString(data, "GET / HTTP/1.0\r\n\r\n")
		require.NoError(t, err)
		require.NoError(t, data.Close())
		got, err := io.ReadAll(data)
		require.NoError(t, err)
		assert.Equal(t, "HTTP/1.0 200 OK\r\n\r\nserved by the backend\n", string(got))
		require.NoError(t, receive(t, served))
	})
	t.Run("nothing listens", func(t *testing.T) {
		_, errs, _ := forwardTo(8080)
		msg, _ := io.ReadAll(errs)
		assert.Contains(t, string(msg), "failed to execute portforward in network namespace")
		assert.Contains(t, string(msg), "dial tcp4 127.0.0.1:8080: connect: connection refused")
	})
}

func TestStreamingErrors(t *testing.T) {
	e := newStreamEnv(t, fake.Options{})
	sb, cfg := e.runPod("web")
	created := e.create(sb, cfg, containerConfig("created", "busybox"))
	running := e.run("running")
	stopped, _ := e.runPod("stopped")
	require.NoError(t, e.rt.StopPodSandbox(t.Context(), stopped))
	ctx := t.Context()
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"exec: unknown container", func() error {
			_, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "nope", Cmd: []string{"sh"}, Stdout: true})
			return err
		}, cri.ErrNotFound},
		{"exec: not running", func() error {
			_, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: created, Cmd: []string{"sh"}, Stdout: true})
			return err
		}, cri.ErrFailedPrecondition},
		{"exec: no stream", func() error {
			_, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: running, Cmd: []string{"sh"}})
			return err
		}, cri.ErrInvalidArgument},
		{"exec: tty and stderr", func() error {
			_, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: running, Cmd: []string{"sh"}, Stdout: true, Stderr: true, Tty: true})
			return err
		}, cri.ErrInvalidArgument},
		{"attach: not running", func() error {
			_, err := e.rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: created, Stdout: true})
			return err
		}, cri.ErrFailedPrecondition},
		{"port forward: unknown sandbox", func() error {
			_, err := e.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "nope"})
			return err
		}, cri.ErrNotFound},
		{"port forward: sandbox not ready", func() error {
			_, err := e.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: stopped})
			return err
		}, cri.ErrFailedPrecondition},
		{"a second server", func() error {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer lis.Close()
			_, err = fake.NewStreamingServer(e.rt, fake.StreamingOptions{Listener: lis})
			return err
		}, fake.ErrStreamingAttached},
		{"no listener", func() error {
			_, err := fake.NewStreamingServer(e.rt, fake.StreamingOptions{})
			return err
		}, cri.ErrInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.call(), tc.want)
		})
	}

	t.Run("the container stops before the client connects", func(t *testing.T) {
		id := e.run("short")
		resp, err := e.rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true})
		require.NoError(t, err)
		require.NoError(t, e.rt.StopContainer(ctx, id, 0))
		s := open(t, resp.Url, sessionOpts{stdout: true})
		st := s.wait()
		assert.Equal(t, "Failure", st.Status)
		assert.Contains(t, st.Message, "container is in CONTAINER_EXITED state")
	})
}

// Run stops every session when its ctx ends, and the runtime's streaming
// calls fail again as they do without a server.
func TestStreamingServerStops(t *testing.T) {
	e := newEnv(t, fake.Options{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := fake.NewStreamingServer(e.rt, fake.StreamingOptions{Listener: lis})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := async(func() error { return srv.Run(ctx) })

	sb, cfg := e.runPod("pod")
	cc := containerConfig("sh", "busybox", "sh")
	cc.Stdin = true
	id := e.create(sb, cfg, cc)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))
	resp, err := e.rt.Attach(t.Context(), &runtimeapi.AttachRequest{ContainerId: id, Stdin: true, Stdout: true})
	require.NoError(t, err)
	s := open(t, resp.Url, sessionOpts{stdin: true, stdout: true})
	s.send("echo attached\n")
	s.stdout.waitFor(t, "attached\n")
	execResp, err := e.rt.Exec(t.Context(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"cat"}, Stdin: true, Stdout: true})
	require.NoError(t, err)
	x := open(t, execResp.Url, sessionOpts{stdin: true, stdout: true})
	x.send("reading\n")
	x.stdout.waitFor(t, "reading\n")

	cancel()
	require.NoError(t, receive(t, done))
	s.wait()
	x.wait()
	_, err = e.rt.Exec(t.Context(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Stdout: true})
	require.ErrorIs(t, err, cri.ErrUnimplemented)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.status(id).State)
}

// Every attached client sees the output; one feeds stdin at a time; Close
// ends the sessions (with an error: the runtime went away) and the
// commands waiting on the clock.
func TestStreamingAttachFanOutAndClose(t *testing.T) {
	e := newStreamEnv(t, fake.Options{ExecRules: []fake.ExecRule{{Command: []string{"wait"}, Duration: time.Hour}}})
	sb, cfg := e.runPod("pod")
	cc := containerConfig("sh", "busybox", "sh")
	cc.Stdin = true
	id := e.create(sb, cfg, cc)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))
	first := e.attach(id, true, false, false)
	waitUntil(t, "the first session follows the output", func() bool { return e.rt.Attachments(id) == 1 })
	// The first feeds stdin once its input has come through; only then
	// does the second attach, so which of the two feeds is not a race.
	first.send("echo from the first\n")
	first.stdout.waitFor(t, "from the first\n")
	second := e.attach(id, true, false, false)
	waitUntil(t, "both sessions follow the output", func() bool { return e.rt.Attachments(id) == 2 })
	first.send("echo to both\n")
	first.stdout.waitFor(t, "to both\n")
	second.stdout.waitFor(t, "to both\n")
	second.send("echo from the second\n") // waits until the first lets go
	first.closeStdin()
	assert.Equal(t, 0, first.wait().exitCode())
	second.stdout.waitFor(t, "from the second\n")

	x := e.exec(id, &runtimeapi.ExecRequest{Cmd: []string{"wait"}, Stdout: true})
	waitUntil(t, "the exec waits on the clock", e.clk.HasWaiters)
	e.rt.Close()
	assert.Equal(t, "Failure", second.wait().Status)
	assert.Equal(t, "Failure", x.wait().Status)
}
