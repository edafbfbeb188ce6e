package logs_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// follow runs ReadLogs with Follow in a goroutine; the channel receives
// its result.
func follow(ctx context.Context, e *env, path, id string, opts logs.Options, out *syncBuffer) <-chan error {
	opts.Follow = true
	opts.Clock = e.clk
	done := make(chan error, 1)
	go func() { done <- logs.ReadLogs(ctx, path, id, &opts, e.rt, out, out) }()
	return done
}

// stopAndWait stops the container and steps the clock until the follower
// notices and ends.
func stopAndWait(t *testing.T, e *env, id string, done <-chan error) error {
	t.Helper()
	require.NoError(t, e.rt.StopContainer(t.Context(), id, 0))
	var err error
	waitFor(t, "the follower to end", func() bool {
		select {
		case err = <-done:
			return true
		default:
			e.clk.Step(logs.StatusCheckPeriod)
			return false
		}
	})
	return err
}

func TestFollow(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts logs.Options
		run  func(t *testing.T, f *followed)
		want string
	}{
		{
			name: "lines as they come",
			run: func(t *testing.T, f *followed) {
				w, out := f.w, f.out
				w.lines(3)
				waitFor(t, "lines 1-3", func() bool { return out.String() == numbered(1, 3) })
				w.raw("2026-03-01T12:00:01Z stdout P li")
				w.raw("ne 4\n2026-03-01T12:00:01Z stdout F  and more\n")
				w.n++
				w.lines(2)
			},
			want: numbered(1, 3) + "line 4 and more\n" + numbered(5, 6),
		},
		{
			name: "a line written in pieces",
			run: func(t *testing.T, f *followed) {
				w := f.w
				w.raw("2026-03-01T12:00:01Z stdout F li")
				waitFor(t, "the follower to wait", func() bool { return f.env.clk.HasWaiters() })
				w.raw("ne 1\n")
				w.n++
			},
			want: numbered(1, 1),
		},
		{
			name: "tail then new lines",
			opts: logs.Options{TailLines: ptr.To[int64](2)},
			run: func(t *testing.T, f *followed) {
				w, out := f.w, f.out
				waitFor(t, "the tail", func() bool { return out.String() == numbered(4, 5) })
				w.lines(2)
			},
			want: numbered(4, 7),
		},
		{
			name: "rotation: the old file gets lines after the new one is seen",
			run: func(t *testing.T, f *followed) {
				w, out := f.w, f.out
				w.lines(2)
				waitFor(t, "lines 1-2", func() bool { return out.String() == numbered(1, 2) })
				require.NoError(t, os.Rename(w.path, w.path+".20260301-120000"))
				// The runtime creates the new file but has not switched
				// its writer yet.
				newFile, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY, 0o640)
				require.NoError(t, err)
				require.NoError(t, newFile.Close())
				f.seenByFollower(t)
				w.lines(2) // to the renamed file
				w.reopen()
				w.lines(2)
				waitFor(t, "lines 1-6", func() bool { return out.String() == numbered(1, 6) })
				w.lines(1)
			},
			want: numbered(1, 7),
		},
		{
			name: "rotation: the new file stays empty until the container stops",
			run: func(t *testing.T, f *followed) {
				w, out := f.w, f.out
				w.lines(1)
				waitFor(t, "line 1", func() bool { return out.String() == numbered(1, 1) })
				require.NoError(t, os.Rename(w.path, w.path+".1"))
				w.reopen()
				waitFor(t, "the follower to wait", func() bool { return f.env.clk.HasWaiters() })
			},
			want: numbered(1, 1),
		},
		{
			name: "rotation: lines written to the old file before the new one is seen",
			run: func(t *testing.T, f *followed) {
				w, out := f.w, f.out
				require.NoError(t, os.Rename(w.path, w.path+".1"))
				w.lines(3)
				w.reopen()
				w.lines(3)
				waitFor(t, "lines 1-6", func() bool { return out.String() == numbered(1, 6) })
				require.NoError(t, os.Rename(w.path, w.path+".2"))
				w.lines(1)
				w.reopen()
				w.lines(1)
			},
			want: numbered(1, 8),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			id, path := env.start("app")
			f := &followed{env: env, w: newRuntimeWriter(t, path), out: &syncBuffer{}}
			if tc.opts.TailLines != nil {
				f.w.lines(5)
			}
			done := follow(t.Context(), env, path, id, tc.opts, f.out)
			waitFor(t, "the follower to wait", env.clk.HasWaiters)
			tc.run(t, f)
			out := f.out
			require.NoError(t, stopAndWait(t, env, id, done))
			assert.Equal(t, tc.want, out.String())
		})
	}
}

// seenByFollower returns once the follower has looked at the log's
// directory since the call: it looks before it asks for the container's
// status, which it does once StatusCheckPeriod has passed. The clock is
// stepped while the follower waits on it, again until it asks: a step
// that comes between its check of the period and its new timer (a
// directory event woke it) is not one it waits out.
func (f *followed) seenByFollower(t *testing.T) {
	t.Helper()
	calls := len(f.env.rt.CallsOf(fake.ContainerStatus))
	waitFor(t, "the follower to ask for the container's status", func() bool {
		if len(f.env.rt.CallsOf(fake.ContainerStatus)) > calls {
			return true
		}
		if f.env.clk.HasWaiters() {
			f.env.clk.Step(logs.StatusCheckPeriod)
		}
		return false
	})
}

// followed is what a TestFollow case drives: the runtime, the writer of
// the followed log, and what the follower wrote.
type followed struct {
	env *env
	w   *runtimeWriter
	out *syncBuffer
}

func TestFollowStoppedContainer(t *testing.T) {
	// The container has already stopped: the follower reads the file and
	// ends without waiting.
	env := newEnv(t)
	id, path := env.start("app")
	w := newRuntimeWriter(t, path)
	w.lines(3)
	require.NoError(t, env.rt.StopContainer(t.Context(), id, 0))
	out := &syncBuffer{}
	require.NoError(t, <-follow(t.Context(), env, path, id, logs.Options{}, out))
	assert.Equal(t, numbered(1, 3), out.String())
}

func TestFollowEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault error
		want  error
	}{
		{name: "container gone", fault: cri.ErrNotFound, want: cri.ErrNotFound},
		{name: "runtime down: keeps following", fault: cri.ErrUnavailable, want: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			id, path := env.start("app")
			w := newRuntimeWriter(t, path)
			w.lines(1)
			env.rt.InjectFault(fake.ContainerStatus, fake.Fault{Err: tc.fault})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			out := &syncBuffer{}
			done := follow(ctx, env, path, id, logs.Options{}, out)
			waitFor(t, "line 1", func() bool { return out.String() == numbered(1, 1) })
			var err error
			ended := false
			// Time passes: the follower asks the runtime every second.
			for range 3 {
				waitFor(t, "the follower to wait or end", func() bool {
					select {
					case err = <-done:
						ended = true
						return true
					default:
						return env.clk.HasWaiters()
					}
				})
				if ended {
					break
				}
				env.clk.Step(logs.StatusCheckPeriod)
			}
			if !ended {
				w.lines(1)
				waitFor(t, "line 2", func() bool { return out.String() == numbered(1, 2) })
				cancel()
				err = <-done
			}
			require.ErrorIs(t, err, tc.want)
			if errors.Is(tc.want, cri.ErrNotFound) {
				assert.ErrorContains(t, err, id)
			}
		})
	}
}

func TestFollowWithRotator(t *testing.T) {
	// The fake runtime logs "tick" every second; the rotator rotates the
	// log at 1 KiB; the follower sees every tick once.
	env := newEnv(t, fake.Rule{Name: "ticker", Behavior: fake.Behavior{
		Stdout: []string{"tick"}, LogEvery: time.Second, LogRepeat: 1000,
	}})
	id, path := env.start("ticker")
	r, err := logs.NewRotator(logs.RotatorOptions{Runtime: env.rt, Clock: env.clk, MaxSize: 1024, MaxFiles: 3})
	require.NoError(t, err)
	out := &syncBuffer{}
	done := follow(t.Context(), env, path, id, logs.Options{}, out)
	ticks := 1
	for round := range 8 {
		for range 20 {
			env.clk.Step(time.Second)
			ticks++
		}
		want := ticks
		waitFor(t, "the ticks", func() bool { return countLines(out.String(), "tick") == want })
		require.NoError(t, r.Rotate(t.Context()), "round %d", round)
	}
	env.clk.Step(time.Second)
	ticks++
	require.NoError(t, stopAndWait(t, env, id, done))
	assert.Equal(t, ticks, countLines(out.String(), "tick"))
	files, err := logs.AllLogs(path)
	require.NoError(t, err)
	assert.Len(t, files, 3, "%v", files)
}

func countLines(s, line string) int {
	n := 0
	for len(s) > 0 {
		i := len(line) + 1
		if len(s) < i || s[:i] != line+"\n" {
			return -1
		}
		s = s[i:]
		n++
	}
	return n
}
