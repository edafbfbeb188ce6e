package fake_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func TestBehaviors(t *testing.T) {
	type state struct {
		after    time.Duration // since the start
		state    runtimeapi.ContainerState
		code     int32
		reason   string
		finished time.Duration // since the start, when exited
	}
	running := func(after time.Duration) state {
		return state{after: after, state: runtimeapi.ContainerState_CONTAINER_RUNNING}
	}
	exited := func(after time.Duration, code int32, reason string, finished time.Duration) state {
		return state{after, runtimeapi.ContainerState_CONTAINER_EXITED, code, reason, finished}
	}
	cases := []struct {
		name     string
		behavior fake.Behavior
		startErr string
		want     []state
	}{
		{"runs until stopped by default", fake.Behavior{}, "", []state{running(0), running(24 * time.Hour)}},
		{"exits 3 after 10s", fake.Behavior{Outcome: fake.Exit, ExitCode: 3, RunFor: 10 * time.Second}, "",
			[]state{running(0), running(9 * time.Second), exited(10*time.Second, 3, "Error", 10*time.Second)}},
		{"completes after 1s, stepped past", fake.Behavior{Outcome: fake.Exit, RunFor: time.Second}, "",
			[]state{running(0), exited(time.Hour, 0, "Completed", time.Second)}},
		{"exits at once", fake.Behavior{Outcome: fake.Exit, ExitCode: 1}, "",
			[]state{exited(0, 1, "Error", 0)}},
		{"OOM-killed after 5s", fake.Behavior{Outcome: fake.OOMKill, RunFor: 5 * time.Second}, "",
			[]state{running(4 * time.Second), exited(5*time.Second, 137, "OOMKilled", 5*time.Second)}},
		{"fails to start", fake.Behavior{Outcome: fake.FailStart, StartError: "exec: \"nope\": executable file not found in $PATH"},
			"executable file not found", []state{exited(0, 128, "StartError", 0), exited(time.Hour, 128, "StartError", 0)}},
		{"fails to start with the default message", fake.Behavior{Outcome: fake.FailStart},
			`exec: "sleep": executable file not found in $PATH`, []state{exited(0, 128, "StartError", 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: tc.behavior}}})
			sb, cfg := e.runPod("web")
			id := e.create(sb, cfg, containerConfig("app", "busybox", "sleep", "3600"))
			e.clk.Step(time.Second) // the start is at t0+1s
			err := e.rt.StartContainer(t.Context(), id)
			if tc.startErr != "" {
				require.ErrorContains(t, err, tc.startErr)
			} else {
				require.NoError(t, err)
			}
			start := time.Second
			for _, w := range tc.want {
				e.clk.SetTime(t0.Add(start + w.after))
				st := e.status(id)
				assert.Equal(t, w.state, st.State, "after %s", w.after)
				assert.Equal(t, w.code, st.ExitCode, "after %s", w.after)
				assert.Equal(t, w.reason, st.Reason, "after %s", w.after)
				if w.state == runtimeapi.ContainerState_CONTAINER_EXITED {
					assert.Equal(t, nanos(start+w.finished), st.FinishedAt, "after %s", w.after)
				}
				if tc.startErr != "" {
					assert.Contains(t, st.Message, tc.startErr)
					assert.Zero(t, st.StartedAt)
				} else {
					assert.Equal(t, nanos(start), st.StartedAt)
				}
			}
			if tc.behavior.Outcome != fake.RunUntilStopped {
				assert.False(t, e.clk.HasWaiters(), "no timer is left behind")
			}
		})
	}
}

func TestRuleMatching(t *testing.T) {
	exit := func(code int32) fake.Behavior { return fake.Behavior{Outcome: fake.Exit, ExitCode: code} }
	images := []string{"busybox:1.36", "busybox", "registry.k8s.io/pause:3.10", "nginx"}
	cases := []struct {
		name  string
		rules []fake.Rule
		image string
		cname string
		argv  []string
		want  int32 // exit code; -1: still running
	}{
		{"no rule", nil, "busybox", "app", nil, -1},
		{"any container", []fake.Rule{{Behavior: exit(1)}}, "nginx", "app", nil, 1},
		{"image without tag matches every tag", []fake.Rule{{Image: "busybox", Behavior: exit(2)}}, "busybox:1.36", "app", nil, 2},
		{"image with a tag matches that tag", []fake.Rule{{Image: "busybox:1.36", Behavior: exit(2)}}, "busybox:latest", "app", nil, -1},
		{"image in another spelling", []fake.Rule{{Image: "docker.io/library/busybox:1.36", Behavior: exit(2)}}, "busybox:1.36", "app", nil, 2},
		{"image by registry", []fake.Rule{{Image: "registry.k8s.io/pause", Behavior: exit(2)}}, "registry.k8s.io/pause:3.10", "app", nil, 2},
		{"other image", []fake.Rule{{Image: "nginx", Behavior: exit(2)}}, "busybox", "app", nil, -1},
		{"image by ID", []fake.Rule{{Image: imageIDOf("docker.io/library/nginx:latest"), Behavior: exit(4)}}, "nginx", "app", nil, 4},
		{"name", []fake.Rule{{Name: "init", Behavior: exit(5)}}, "busybox", "init", nil, 5},
		{"other name", []fake.Rule{{Name: "init", Behavior: exit(5)}}, "busybox", "app", nil, -1},
		{"exact command", []fake.Rule{{Command: []string{"sh", "-c", "exit 3"}, Behavior: exit(3)}}, "busybox", "app", []string{"sh", "-c", "exit 3"}, 3},
		{"exact command is not a prefix", []fake.Rule{{Command: []string{"sh", "-c"}, Behavior: exit(3)}}, "busybox", "app", []string{"sh", "-c", "exit 3"}, -1},
		{"command prefix", []fake.Rule{{CommandPrefix: []string{"sh", "-c"}, Behavior: exit(6)}}, "busybox", "app", []string{"sh", "-c", "exit 3"}, 6},
		{"command prefix longer than argv", []fake.Rule{{CommandPrefix: []string{"sh", "-c", "x", "y"}, Behavior: exit(6)}}, "busybox", "app", []string{"sh", "-c", "x"}, -1},
		{"every matcher must match", []fake.Rule{{Image: "busybox", Name: "other", Behavior: exit(7)}}, "busybox", "app", nil, -1},
		{"first match wins", []fake.Rule{
			{Image: "nginx", Behavior: exit(1)},
			{Image: "busybox", Behavior: exit(2)},
			{Behavior: exit(3)},
		}, "busybox", "app", nil, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{Images: images, Rules: tc.rules})
			sb, cfg := e.runPod("web")
			c := containerConfig(tc.cname, tc.image)
			if len(tc.argv) > 0 {
				c.Command, c.Args = tc.argv[:1], tc.argv[1:]
			}
			id := e.create(sb, cfg, c)
			require.NoError(t, e.rt.StartContainer(t.Context(), id))
			st := e.status(id)
			if tc.want < 0 {
				assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st.State)
				return
			}
			assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
			assert.Equal(t, tc.want, st.ExitCode)
		})
	}

	t.Run("SetRules applies to later starts", func(t *testing.T) {
		e := newEnv(t, fake.Options{})
		before := e.run("before")
		e.rt.SetRules([]fake.Rule{{Behavior: exit(9)}})
		after := e.run("after")
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.status(before).State)
		assert.EqualValues(t, 9, e.status(after).ExitCode)
	})
}

func imageIDOf(ref string) string {
	e := fake.New(fake.Options{Images: []string{ref}})
	defer e.Close()
	imgs, _ := e.ListImages(context.Background(), nil)
	return imgs[0].Id
}

func TestStopContainerAnswersSIGTERM(t *testing.T) {
	cases := []struct {
		name      string
		behavior  fake.Behavior
		timeout   int64
		steps     []time.Duration // steps during which the stop is still waiting
		lastStep  time.Duration   // the step that ends it
		code      int32
		reason    string
		finishedG time.Duration // FinishedAt after the stop began
	}{
		{name: "dies at once", timeout: 30, code: 143, reason: "Error"},
		{name: "timeout 0 kills at once", behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}, timeout: 0, code: 137, reason: "Error"},
		{name: "ignores SIGTERM until the timeout", behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}, timeout: 30,
			steps: []time.Duration{10 * time.Second, 19 * time.Second}, lastStep: 5 * time.Second, code: 137, reason: "Error", finishedG: 30 * time.Second},
		{name: "exits cleanly after its shutdown time", behavior: fake.Behavior{OnSIGTERM: fake.ExitOnSIGTERM, ShutdownTime: 5 * time.Second}, timeout: 30,
			steps: []time.Duration{4 * time.Second}, lastStep: time.Second, code: 0, reason: "Completed", finishedG: 5 * time.Second},
		{name: "exits cleanly at once", behavior: fake.Behavior{OnSIGTERM: fake.ExitOnSIGTERM}, timeout: 30, code: 0, reason: "Completed"},
		{name: "shutdown longer than the timeout", behavior: fake.Behavior{OnSIGTERM: fake.ExitOnSIGTERM, ShutdownTime: time.Minute}, timeout: 2,
			steps: []time.Duration{time.Second}, lastStep: time.Second, code: 137, reason: "Error", finishedG: 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: tc.behavior}}})
			id := e.run("app")
			e.clk.Step(time.Minute)
			done := async(func() error { return e.rt.StopContainer(t.Context(), id, tc.timeout) })
			if tc.lastStep > 0 {
				waitUntil(t, "StopContainer waits on the clock", e.clk.HasWaiters)
				for _, d := range tc.steps {
					e.clk.Step(d)
					assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.status(id).State)
					pending(t, done)
				}
				e.clk.Step(tc.lastStep)
			}
			require.NoError(t, receive(t, done))
			st := e.status(id)
			assert.Equal(t, runtimeapi.ContainerState_CONTAINER_EXITED, st.State)
			assert.Equal(t, tc.code, st.ExitCode)
			assert.Equal(t, tc.reason, st.Reason)
			assert.Equal(t, nanos(time.Minute+tc.finishedG), st.FinishedAt)
			assert.False(t, e.clk.HasWaiters())
		})
	}

	t.Run("a cancelled stop returns at once and leaves it running", func(t *testing.T) {
		e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}}}})
		id := e.run("app")
		ctx, cancel := context.WithCancel(t.Context())
		done := async(func() error { return e.rt.StopContainer(ctx, id, 30) })
		waitUntil(t, "StopContainer waits on the clock", e.clk.HasWaiters)
		cancel()
		require.ErrorIs(t, receive(t, done), context.Canceled)
		assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, e.status(id).State)
		assert.False(t, e.clk.HasWaiters(), "the stop's timer is stopped")
	})

	t.Run("a container exiting by itself ends the wait", func(t *testing.T) {
		e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{
			Outcome: fake.Exit, ExitCode: 0, RunFor: 10 * time.Second, OnSIGTERM: fake.IgnoreSIGTERM,
		}}}})
		id := e.run("app")
		done := async(func() error { return e.rt.StopContainer(t.Context(), id, 30) })
		waitUntil(t, "StopContainer waits on the clock", func() bool { return e.clk.Waiters() == 2 })
		e.clk.Step(10 * time.Second)
		require.NoError(t, receive(t, done))
		st := e.status(id)
		assert.EqualValues(t, 0, st.ExitCode)
		assert.Equal(t, "Completed", st.Reason)
		assert.Equal(t, nanos(10*time.Second), st.FinishedAt)
	})

	t.Run("removing the container ends the wait", func(t *testing.T) {
		e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}}}})
		id := e.run("app")
		done := async(func() error { return e.rt.StopContainer(t.Context(), id, 30) })
		waitUntil(t, "StopContainer waits on the clock", e.clk.HasWaiters)
		require.NoError(t, e.rt.RemoveContainer(t.Context(), id))
		require.NoError(t, receive(t, done))
	})

	t.Run("Close ends the wait", func(t *testing.T) {
		e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{OnSIGTERM: fake.IgnoreSIGTERM}}}})
		id := e.run("app")
		done := async(func() error { return e.rt.StopContainer(t.Context(), id, 30) })
		waitUntil(t, "StopContainer waits on the clock", e.clk.HasWaiters)
		e.rt.Close()
		err := receive(t, done)
		require.ErrorIs(t, err, fake.ErrClosed)
		require.ErrorIs(t, err, cri.ErrUnavailable)
	})
}

func TestScriptedExitsAndClose(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: time.Hour}}}})
	id := e.run("app")
	require.True(t, e.clk.HasWaiters())
	e.rt.Close()
	assert.False(t, e.clk.HasWaiters(), "Close stops the scripted timers")
	e.clk.Step(2 * time.Hour)
	st := e.rt.Containers()
	require.Len(t, st, 1)
	assert.Equal(t, id, st[0].Id)
	assert.Equal(t, runtimeapi.ContainerState_CONTAINER_RUNNING, st[0].State)
	_, err := e.rt.ListContainers(t.Context(), nil)
	require.ErrorIs(t, err, fake.ErrClosed)
}

func TestStoppingAScriptedContainerStopsItsTimer(t *testing.T) {
	e := newEnv(t, fake.Options{Rules: []fake.Rule{{Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: time.Hour}}}})
	id := e.run("app")
	require.True(t, e.clk.HasWaiters())
	require.NoError(t, e.rt.StopContainer(t.Context(), id, 10))
	assert.False(t, e.clk.HasWaiters(), "so that HasWaiters means what a test expects")
	assert.EqualValues(t, 143, e.status(id).ExitCode)
}
