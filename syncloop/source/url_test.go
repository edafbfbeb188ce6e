package source_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// server serves whatever status and body the test sets.
type server struct {
	mu      sync.Mutex
	status  int
	body    string
	headers []http.Header
	*httptest.Server
}

func newServer(t *testing.T) *server {
	s := &server{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.headers = append(s.headers, r.Header.Clone())
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(s.body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) serve(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

const podList = `apiVersion: v1
kind: PodList
items:
- metadata: {name: l1}
  spec: {containers: [{name: c, image: i}]}
- metadata: {name: l2}
  spec: {containers: [{name: c, image: i}]}
`

func newURL(t *testing.T, rawURL string, out chan syncloop.PodUpdate, mod func(*source.URLOptions)) *source.URL {
	t.Helper()
	opts := source.URLOptions{URL: rawURL, NodeName: nodeName, Out: out}
	if mod != nil {
		mod(&opts)
	}
	u, err := source.NewURL(opts)
	require.NoError(t, err)
	return u
}

func TestURLFetch(t *testing.T) {
	srv := newServer(t)
	out := make(chan syncloop.PodUpdate, 1)
	rec := &eventtest.Recorder{}
	u := newURL(t, srv.URL+"/pods", out, func(o *source.URLOptions) {
		o.Header = http.Header{"Authorization": {"Bearer s3cret"}}
		o.Recorder = rec
	})
	ctx := t.Context()
	fetch := func() ([]string, error) {
		err := u.Fetch(ctx)
		select {
		case m := <-out:
			require.Equal(t, syncloop.OpSet, m.Op)
			require.Equal(t, syncloop.SourceHTTP, m.Source)
			return podNames(m.Pods), err
		default:
			return nil, err // nothing sent
		}
	}

	steps := []struct {
		name    string
		status  int
		body    string
		want    []string // nil: nothing sent
		errHas  string
		wantErr error
	}{
		{name: "a pod", status: 200, body: manifest("web", "i"), want: []string{"web-node-a"}},
		{name: "the same body again is sent again", status: 200, body: manifest("web", "i"), want: []string{"web-node-a"}},
		{name: "a pod list", status: 200, body: podList, want: []string{"l1-node-a", "l2-node-a"}},
		{name: "404 keeps the pods", status: 404, body: "nope", errHas: "404 Not Found"},
		{name: "500 keeps the pods", status: 500, body: podList, errHas: "500 Internal Server Error"},
		{name: "garbage keeps the pods", status: 200, body: "<html>", errHas: "invalid manifest", wantErr: source.ErrInvalidManifest},
		{name: "the same garbage again", status: 200, body: "<html>", wantErr: source.ErrInvalidManifest},
		{name: "an invalid pod keeps the pods", status: 200, body: noContainers, wantErr: validation.ErrInvalidPod, errHas: "spec.containers: Required value"},
		{name: "a JSON pod", status: 200, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, want: []string{"j-node-a"}},
		{name: "an empty body is an empty SET and an error", status: 200, body: "", want: []string{}, errHas: "zero-length data"},
		{name: "back", status: 200, body: manifest("web", "i"), want: []string{"web-node-a"}},
	}
	for _, s := range steps {
		srv.serve(s.status, s.body)
		got, err := fetch()
		assert.Equal(t, s.want, got, s.name)
		if s.errHas == "" && s.wantErr == nil {
			assert.NoError(t, err, s.name)
			continue
		}
		require.Error(t, err, s.name)
		assert.Contains(t, err.Error(), s.errHas, s.name)
		if s.wantErr != nil {
			assert.ErrorIs(t, err, s.wantErr, s.name)
		}
		assert.Contains(t, err.Error(), srv.URL, "the error names the URL")
	}
	assert.Equal(t, []string{source.ReasonFailedValidation, source.ReasonFailedValidation}, rec.TakeReasons(),
		"one event per distinct undecodable or invalid body")
	srv.mu.Lock()
	assert.Equal(t, "Bearer s3cret", srv.headers[0].Get("Authorization"))
	srv.mu.Unlock()
}

func TestURLTooLarge(t *testing.T) {
	srv := newServer(t)
	srv.serve(200, manifest("big", "i")+"# "+strings.Repeat("x", source.MaxManifestBytes))
	u := newURL(t, srv.URL, make(chan syncloop.PodUpdate, 1), nil)
	err := u.Fetch(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than")
}

func TestURLRunLogsAndPeriod(t *testing.T) {
	srv := newServer(t)
	srv.serve(404, "")
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clk := testclock.NewFakeClock(t0)
	out := make(chan syncloop.PodUpdate)
	rawURL := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1)
	u := newURL(t, rawURL, out, func(o *source.URLOptions) { o.Clock = clk; o.Logger = log })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()

	for range 4 { // the first fetch, then four more: five failures
		eventually(t, "the source waits", clk.HasWaiters)
		clk.Step(source.DefaultPeriod)
	}
	eventually(t, "the source waits", clk.HasWaiters)
	srv.serve(200, manifest("web", "i"))
	clk.Step(source.DefaultPeriod)
	assert.Equal(t, []string{"web-node-a"}, podNames(receive(t, out).Pods))
	cancel()
	require.NoError(t, receive(t, done))

	logMu.Lock()
	text := logs.String()
	logMu.Unlock()
	assert.Equal(t, 3, strings.Count(text, `level=WARN msg="failed to read pods from URL"`), text)
	assert.Equal(t, 1, strings.Count(text, "logging further failures at debug level"), text)
	assert.Equal(t, 1, strings.Count(text, `level=DEBUG msg="failed to read pods from URL"`), text)
	assert.Contains(t, text, `msg="read pods from URL again" url=http://user:xxxxx@`)
	assert.NotContains(t, text, "hunter2", "the password is never logged")
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestURLTransportErrorKeepsPodsAndHidesPassword(t *testing.T) {
	srv := newServer(t)
	rawURL := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1)
	srv.Close()
	out := make(chan syncloop.PodUpdate, 1)
	u := newURL(t, rawURL, out, func(o *source.URLOptions) { o.Client = &http.Client{Timeout: time.Second} })
	err := u.Fetch(t.Context())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	nothing(t, out)
}

func TestNewURLOptions(t *testing.T) {
	out := make(chan syncloop.PodUpdate)
	cases := []struct {
		name string
		opts source.URLOptions
		msg  string
	}{
		{"no url", source.URLOptions{NodeName: "n", Out: out}, "url is required"},
		{"not http", source.URLOptions{URL: "file:///etc/pods", NodeName: "n", Out: out}, "not an absolute http or https URL"},
		{"relative", source.URLOptions{URL: "/pods", NodeName: "n", Out: out}, "not an absolute"},
		{"password redacted", source.URLOptions{URL: "ftp://u:pw@h/x", NodeName: "n", Out: out}, "ftp://u:xxxxx@h/x"},
		{"no node", source.URLOptions{URL: "http://h/", Out: out}, "node name is required"},
		{"no out", source.URLOptions{URL: "http://h/", NodeName: "n"}, "out channel is required"},
		{"negative period", source.URLOptions{URL: "http://h/", NodeName: "n", Out: out, Period: -1}, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := source.NewURL(tc.opts)
			require.Error(t, err)
			assert.True(t, errors.Is(err, source.ErrInvalidOptions))
			assert.Contains(t, err.Error(), tc.msg)
			assert.NotContains(t, err.Error(), ":pw@")
		})
	}
}
