package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// refused is the error client-go returns when nothing listens on the API
// server's port.
func refused() error {
	return &url.Error{Op: "Get", URL: "https://192.0.2.1:6443/api/v1/pods", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
}

func TestNotAnswering(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", refused(), true},
		{"name does not resolve", &url.Error{Op: "Get", URL: "https://cp.example:6443", Err: &net.DNSError{Err: "no such host", Name: "cp.example", IsNotFound: true}}, true},
		{"deadline", fmt.Errorf("check access: %w", context.DeadlineExceeded), true},
		{"cancelled", fmt.Errorf("check access: %w", context.Canceled), false},
		{"500", apierrors.NewInternalError(errors.New("etcd")), true},
		{"503", apierrors.NewServiceUnavailable("starting"), true},
		{"502 from a proxy", apierrors.NewGenericServerResponse(502, "get", gr, "", "bad gateway", 0, true), true},
		{"504", apierrors.NewTimeoutError("slow", 1), true},
		{"429", apierrors.NewTooManyRequests("busy", 1), true},
		{"401", apierrors.NewUnauthorized("bad token"), false},
		{"403", apierrors.NewForbidden(gr, "", errors.New("no RBAC")), false},
		{"404", apierrors.NewNotFound(gr, "web"), false},
		{"access denied", fmt.Errorf("check access: 1 of 16 denied: %w", apiserver.ErrAccessDenied), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, apiserver.NotAnswering(tt.err))
		})
	}
}

// awayServer makes a fake clientset's every call fail as when nothing
// listens on the API server's port, while away; calls counts those calls.
type awayServer struct {
	away  atomic.Bool
	calls atomic.Int64
}

// newAwayServer puts the reactors in front of client's (add allowAll and
// the like first), away.
func newAwayServer(client *fake.Clientset) *awayServer {
	s := &awayServer{}
	s.away.Store(true)
	client.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		if !s.away.Load() {
			return false, nil, nil
		}
		s.calls.Add(1)
		return true, nil, refused()
	})
	client.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) {
		if !s.away.Load() {
			return false, nil, nil
		}
		s.calls.Add(1)
		return true, nil, refused()
	})
	return s
}

// logRecords keeps what a logger of its logger() logs, one line a record
// ("msg k=v ..."), by level; safe for concurrent use.
type logRecords struct {
	mu    sync.Mutex
	lines map[slog.Level][]string
}

func (l *logRecords) logger() *slog.Logger { return slog.New(&recordingHandler{logs: l}) }

// at returns the lines logged at level.
func (l *logRecords) at(level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines[level])
}

// String returns every line, whatever its level.
func (l *logRecords) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, lines := range l.lines {
		for _, line := range lines {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// recordingHandler is the slog.Handler of logRecords.logger.
type recordingHandler struct {
	logs  *logRecords
	attrs []slog.Attr
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	for _, a := range h.attrs {
		line += " " + a.String()
	}
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	if h.logs.lines == nil {
		h.logs.lines = map[slog.Level][]string{}
	}
	h.logs.lines[r.Level] = append(h.logs.lines[r.Level], line)
	return nil
}

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recordingHandler{logs: h.logs, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h *recordingHandler) WithGroup(string) slog.Handler { return h } // no groups here

// Without a local state, a server that does not answer at start does not
// hold the node back: the agent starts at once, the pod source retries
// its list with back-off until the server answers, and the access check,
// tried again meanwhile, passes then. One warning says so, not one per
// retry.
func TestRunStartsWhileTheServerDoesNotAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(apiPod("default", "web", "u1", "n1"))
		allowAll(client, "")
		server := newAwayServer(client)
		var logs logRecords
		var opts agent.Options
		j := joinedWith(t, client, apiserver.JoinOptions{Logger: logs.logger()}, &opts)

		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan time.Time, 1)
		first := make(chan []*v1.Pod, 1)
		done := make(chan error, 1)
		go func() {
			done <- j.Run(ctx, &fakeAgent{name: "n1", run: func(ctx context.Context) error {
				started <- time.Now()
				select {
				case u := <-opts.Cluster.Updates:
					first <- u.Pods
				case <-ctx.Done():
				}
				<-ctx.Done()
				return nil
			}})
		}()
		begin := time.Now()
		synctest.Wait()
		select {
		case at := <-started:
			assert.Equal(t, begin, at, "the agent starts without waiting")
		default:
			t.Fatal("the agent has not started while the API server does not answer")
		}
		warns := logs.at(slog.LevelWarn)
		require.Len(t, warns, 1, "one warning at start")
		assert.Contains(t, warns[0], "the API server does not answer: starting the node")
		assert.Contains(t, warns[0], "connection refused")

		// A minute away: the list is retried, nothing is sent, Run goes
		// on, and no more warnings.
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Greater(t, server.calls.Load(), int64(10), "retried")
		assert.Empty(t, first, "nothing listed")
		assert.Empty(t, done, "Run goes on")
		assert.Len(t, logs.at(slog.LevelWarn), 1, "no warning per retry")

		// Back: the next list (within the reflector's back-off, 30s
		// doubled by jitter at most) sends the node's pods, and the
		// access check passes.
		server.away.Store(false)
		back := time.Now()
		time.Sleep(61 * time.Second)
		synctest.Wait()
		select {
		case pods := <-first:
			require.Len(t, pods, 1)
			assert.Equal(t, "web", pods[0].Name)
		default:
			t.Fatalf("no list %s after the server came back", time.Since(back))
		}
		assert.Contains(t, logs.String(), "the API server answers: the node's access is granted")
		assert.Empty(t, done, "Run goes on")
		cancel()
		require.NoError(t, <-done)
	})
}

// An API server that answers with a refusal stops the node, whether it
// answers at start (before the agent starts; with a local state too) or
// after an outage the node started through.
func TestRunStopsOnARefusal(t *testing.T) {
	for _, tt := range []struct {
		name       string
		localState bool
		deny       func(*fake.Clientset)
		away       bool // at start; then the server answers with deny
		want       func(error) bool
		wantText   string
	}{
		{name: "401 at start", deny: unauthorized, want: apierrors.IsUnauthorized, wantText: "token expired"},
		{name: "401 at start, local state", localState: true, deny: unauthorized, want: apierrors.IsUnauthorized, wantText: "token expired"},
		{name: "denied at start, local state", localState: true, deny: denyLeases, want: isAccessDenied, wantText: "leases"},
		{name: "denied after an outage", away: true, deny: denyLeases, want: isAccessDenied, wantText: "the API server answered after 1m"},
		{name: "401 after an outage, local state", localState: true, away: true, deny: unauthorized, want: apierrors.IsUnauthorized,
			wantText: "the API server answered after 1m"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset()
				tt.deny(client)
				var server *awayServer
				if tt.away {
					server = newAwayServer(client)
				}
				jopts := apiserver.JoinOptions{}
				if tt.localState {
					st, err := localstate.New(localstate.NewMemory(0))
					require.NoError(t, err)
					jopts.LocalState = st
				}
				var opts agent.Options
				j := joinedWith(t, client, jopts, &opts)
				started := make(chan struct{})
				done := make(chan error, 1)
				go func() {
					done <- j.Run(context.Background(), &fakeAgent{name: "n1", run: func(ctx context.Context) error {
						close(started)
						<-ctx.Done()
						return nil
					}})
				}()
				if tt.away {
					time.Sleep(time.Minute)
					synctest.Wait()
					require.Empty(t, done, "the node runs while the server is away")
					server.away.Store(false)
					// A server that has just started may refuse until its
					// authorizers sync: the refusal must last 30s.
					time.Sleep(25 * time.Second)
					synctest.Wait()
					require.Empty(t, done, "the node runs through the first 30s of a refusal")
				}
				time.Sleep(15 * time.Second) // the check's back-off is 7s at most
				synctest.Wait()
				var err2 error
				select {
				case err2 = <-done:
				default:
					t.Fatal("Run goes on after a refusal")
				}
				require.Error(t, err2)
				assert.True(t, tt.want(err2), "%v", err2)
				assert.Contains(t, err2.Error(), tt.wantText)
				select {
				case <-started:
					assert.True(t, tt.away, "the agent started though the server refused at start")
				default:
					assert.False(t, tt.away, "the agent never started")
				}
			})
		})
	}
}

func denyLeases(client *fake.Clientset) { allowAll(client, "leases") }

func isAccessDenied(err error) bool { return errors.Is(err, apiserver.ErrAccessDenied) }

// A server that comes back refusing for a while, as a kube-apiserver does
// until its authorizers have synced, and then grants the node's access
// leaves the node running.
func TestRunRidesOutARefusalOfAStartingServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		allowAll(client, "")
		var starting atomic.Bool
		starting.Store(true)
		client.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
			if starting.Load() {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, "", errors.New("RBAC: not synced"))
			}
			return false, nil, nil
		})
		server := newAwayServer(client)
		var logs logRecords
		var opts agent.Options
		j := joinedWith(t, client, apiserver.JoinOptions{Logger: logs.logger()}, &opts)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- j.Run(ctx, &fakeAgent{name: "n1", run: func(ctx context.Context) error { <-ctx.Done(); return nil }})
		}()
		time.Sleep(10 * time.Second)
		server.away.Store(false)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		assert.Contains(t, logs.String(), "the API server refuses the node's access; checking again")
		starting.Store(false)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		require.Empty(t, done, "Run goes on")
		assert.Contains(t, logs.String(), "the API server answers: the node's access is granted")
		cancel()
		require.NoError(t, <-done)
	})
}

// unauthorized answers every access review with 401.
func unauthorized(client *fake.Clientset) {
	client.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewUnauthorized("token expired")
	})
}

// A server that takes the connection and never answers holds the start
// up for 2s without a local state, then the node starts; the warning
// names the server.
func TestRunStartsWhenTheCheckHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// In the bubble: each request waits for its context, as on a
		// server that never answers.
		client, err := kubernetes.NewForConfig(&rest.Config{Host: "https://cp.example:6443",
			Transport: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done()
				return nil, r.Context().Err()
			})})
		require.NoError(t, err)
		var logs logRecords
		var opts agent.Options
		j := joinedWith(t, client, apiserver.JoinOptions{Logger: logs.logger()}, &opts)
		ctx, cancel := context.WithCancel(context.Background())
		begin := time.Now()
		started := make(chan time.Duration, 1)
		done := make(chan error, 1)
		go func() {
			done <- j.Run(ctx, &fakeAgent{name: "n1", run: func(ctx context.Context) error {
				started <- time.Since(begin)
				<-ctx.Done()
				return nil
			}})
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case d := <-started:
			assert.Equal(t, 2*time.Second, d)
		default:
			t.Fatal("the agent has not started")
		}
		warns := logs.at(slog.LevelWarn)
		require.Len(t, warns, 1)
		assert.Contains(t, warns[0], "server=https://cp.example:6443")
		assert.Contains(t, warns[0], "no answer within 2s")
		cancel()
		require.NoError(t, <-done)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An agent on the fake runtime, joined without a local state to an API
// server that does not answer (issue 35): its static pod runs within a
// second, and the node keeps running through a minute of outage with one
// warning per adapter, not one per retry. When the server answers, within
// the back-offs (7s for the Node, 60s at most for the pod list) the Node
// registers and turns Ready, its lease is held, the static pod gets its
// mirror pod with its status (Running), and the events recorded during
// the outage are written.
func TestJoinedAgentStartsWithoutTheAPIServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		allowAll(client, "")
		client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
			a.(k8stesting.CreateAction).GetObject().(*v1.Pod).UID = "mirror-uid" // as the API server does
			return false, nil, nil
		})
		server := newAwayServer(client)
		var logs logRecords
		opts := staticAgentOptions(t)
		opts.Logger = logs.logger()
		j := joinedWith(t, client, apiserver.JoinOptions{Logger: logs.logger()}, &opts)
		a, err := agent.New(opts)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- j.Run(ctx, a) }()

		staticRunning := func() bool {
			for _, p := range a.PodStatuses() {
				if p.Name == "static-n1" {
					return p.Status.Phase == v1.PodRunning
				}
			}
			return false
		}
		time.Sleep(time.Second) // the fake time of the bubble
		synctest.Wait()
		require.True(t, staticRunning(), "the static pod runs a second after the start, the API server away")

		time.Sleep(10 * time.Second) // every adapter has failed by now
		synctest.Wait()
		warns := logs.at(slog.LevelWarn)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, done, "the node runs on")
		assert.True(t, staticRunning())
		assert.Equal(t, warns, logs.at(slog.LevelWarn), "a warning per adapter, not per retry")
		var outage []string
		for _, w := range warns {
			if strings.Contains(w, "connection refused") {
				outage = append(outage, w)
			}
		}
		// The access check, the registration, the lease, the node status,
		// the static pod's status.
		assert.Len(t, outage, 5, "%s", strings.Join(outage, "\n"))
		_, err = client.Tracker().Get(v1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
		require.True(t, apierrors.IsNotFound(err), "no Node while away: %v", err)

		// The pod source lists again within its reflector's back-off
		// (30s doubled by jitter at most); housekeeping, which syncs the
		// mirror pods, waits for that list.
		server.away.Store(false)
		time.Sleep(70 * time.Second)
		synctest.Wait()
		require.Empty(t, done, "the node runs on")
		assert.Len(t, logs.at(slog.LevelWarn), len(warns), "no warning once the server answers:\n%s", strings.Join(logs.at(slog.LevelWarn), "\n"))
		assertRegisteredReadyLeased(t, client)
		mirror, err := client.CoreV1().Pods("default").Get(context.Background(), "static-n1", metav1.GetOptions{})
		require.NoError(t, err, "the mirror pod")
		assert.NotEmpty(t, mirror.Annotations[podspec.ConfigMirrorAnnotation])
		assert.Equal(t, v1.PodRunning, mirror.Status.Phase, "the static pod's status on its mirror pod")
		assert.Contains(t, eventReasons(client, "static-n1"), "Started", "the events of the outage")

		cancel()
		require.NoError(t, <-done)
	})
}
