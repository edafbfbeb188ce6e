package fake_test

import (
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

// The built-in commands on a container's files: the skeleton directories,
// what mkdir makes, and the mounts (read through, never written). The steps
// run in order, each on what the ones before left.
func TestExecSyncFiles(t *testing.T) {
	e := newEnv(t, fake.Options{})
	vol := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(vol, "conf"), []byte("key=value\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "empty"), nil, 0o644))
	sb, cfg := e.runPod("pod-files")
	cc := containerConfig("app", "busybox", "sleep", "3600")
	cc.Mounts = []*runtimeapi.Mount{{ContainerPath: "/etc/app", HostPath: vol}}
	id := e.create(sb, cfg, cc)
	require.NoError(t, e.rt.StartContainer(t.Context(), id))

	steps := []struct {
		cmd            []string
		stdout, stderr string
		code           int32
	}{
		{cmd: []string{"test", "-d", "/tmp"}},
		{cmd: []string{"test", "-d", "/data"}, code: 1},
		{cmd: []string{"test", "-e", "/etc/app/conf"}},
		{cmd: []string{"test", "-f", "/etc/app"}, code: 1},
		{cmd: []string{"test", "-s", "/etc/app/empty"}, code: 1},
		{cmd: []string{"test", "!", "-e", "/nope"}},
		{cmd: []string{"[", "-d", "/etc/app", "]"}},
		{cmd: []string{"[", "-d", "/etc/app"}, stderr: "[: missing ]\n", code: 2},
		{cmd: []string{"test", "-x", "/bin/sh"}}, // not modelled: the default
		{cmd: []string{"mkdir", "/data"}},
		{cmd: []string{"mkdir", "/data"}, stderr: "mkdir: can't create directory '/data': File exists\n", code: 1},
		{cmd: []string{"mkdir", "-p", "/data", "/srv/a/b"}},
		{cmd: []string{"mkdir", "/x/y"}, stderr: "mkdir: can't create directory '/x/y': No such file or directory\n", code: 1},
		{cmd: []string{"mkdir", "/etc/app/sub"}, stderr: "mkdir: can't create directory '/etc/app/sub': the fake runtime does not write to mounts\n", code: 1},
		{cmd: []string{"sh", "-c", "test -d /srv/a/b && echo made"}, stdout: "made\n"},
		{cmd: []string{"cat", "/data"}, stderr: "cat: read error: Is a directory\n", code: 1},
		{cmd: []string{"cat", "/etc/app/conf", "/etc/os-release"}, stdout: "key=value\n"}, // an image file: unknown, nothing
		{cmd: []string{"tar", "cf", "/tmp/a.tar", "/data"}, stderr: "tar: can't open '/tmp/a.tar': the fake runtime's tar reads and writes only its standard streams (-f -)\n", code: 1},
		{cmd: []string{"tar", "f", "-"}, stderr: "tar: need one of -c, -t or -x\n", code: 1},
		{cmd: []string{"tar", "-cq"}, stderr: "tar: invalid option -- 'q'\n", code: 1},
		{cmd: []string{"tar", "cf", "-", "/nope"}, stdout: strings.Repeat("\x00", 1024), stderr: "tar: removing leading '/' from member names\ntar: /nope: No such file or directory\n", code: 1},
	}
	for _, st := range steps {
		resp, err := e.rt.ExecSync(t.Context(), id, st.cmd, 0)
		require.NoError(t, err, "%q", st.cmd)
		assert.Equal(t, st.stdout, string(resp.Stdout), "%q", st.cmd)
		assert.Equal(t, st.stderr, string(resp.Stderr), "%q", st.cmd)
		assert.Equal(t, st.code, resp.ExitCode, "%q", st.cmd)
	}

	// A container's files are its own: another container of the pod, or a
	// new attempt, starts from the skeleton.
	other := e.create(sb, cfg, containerConfig("other", "busybox"))
	require.NoError(t, e.rt.StartContainer(t.Context(), other))
	resp, err := e.rt.ExecSync(t.Context(), other, []string{"test", "-d", "/data"}, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 1, resp.ExitCode)
}

// The commands of a script each wait their rule's Duration, and together
// they count against ExecSync's timeout.
func TestExecSyncScriptTimeout(t *testing.T) {
	e := newEnv(t, fake.Options{ExecRules: []fake.ExecRule{{Command: []string{"step"}, Stdout: "step\n", Duration: 3 * time.Second}}})
	id := e.run("app")
	cases := []struct {
		name    string
		script  string
		steps   []time.Duration
		wantErr error
		stdout  string
	}{
		{"within the timeout", "step", []time.Duration{3 * time.Second}, nil, "step\n"},
		{"two steps outlast it", "step; step", []time.Duration{3 * time.Second, 2 * time.Second}, cri.ErrTimeout, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				resp *runtimeapi.ExecSyncResponse
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := e.rt.ExecSync(t.Context(), id, []string{"sh", "-c", tc.script}, 5*time.Second)
				done <- result{resp, err}
			}()
			for _, d := range tc.steps {
				waitUntil(t, "the exec waits on the clock", e.clk.HasWaiters)
				pending(t, done)
				e.clk.Step(d)
			}
			res := receive(t, done)
			if tc.wantErr != nil {
				require.ErrorIs(t, res.err, tc.wantErr)
				return
			}
			require.NoError(t, res.err)
			assert.Equal(t, tc.stdout, string(res.resp.Stdout))
		})
	}
}
