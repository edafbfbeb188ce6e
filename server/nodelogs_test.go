package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/server"
)

// fakeJournal answers journalctl as a node whose journal has the units
// given, and records the arguments of every run.
type fakeJournal struct {
	units   []string // e.g. "kubelet.service"
	output  string   // what a query prints
	unitErr error    // the units' run fails with it
	runErr  error    // a query's run fails with it

	mu    sync.Mutex
	calls [][]string
}

func (j *fakeJournal) Run(_ context.Context, args []string, w io.Writer) error {
	j.mu.Lock()
	j.calls = append(j.calls, args)
	j.mu.Unlock()
	if len(args) == 2 && args[0] == "--field" && args[1] == "_SYSTEMD_UNIT" {
		if j.unitErr != nil {
			return j.unitErr
		}
		_, err := io.WriteString(w, strings.Join(j.units, "\n")+"\n")
		return err
	}
	if _, err := io.WriteString(w, j.output); err != nil {
		return err
	}
	return j.runErr
}

func (j *fakeJournal) recorded() [][]string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls
}

// logDir makes a node's log directory beside a secret file and directory
// that must not be reached from it: foo.log, sub/bar.log, myapp.log,
// other/other.log, a link to the secret file and one to the secret
// directory.
func logDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "log")
	for name, content := range map[string]string{
		"secret":              "do not show\n",
		"secretdir/x.log":     "do not show either\n",
		"log/foo.log":         "foo line\n",
		"log/sub/bar.log":     "bar line\n",
		"log/myapp.log":       "myapp line\n",
		"log/other/other.log": "other line\n",
	} {
		p := filepath.Join(base, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Join(base, "secret"), filepath.Join(dir, "out.log")))
	require.NoError(t, os.Symlink(filepath.Join(base, "secretdir"), filepath.Join(dir, "outdir")))
	return dir
}

func logsServer(logs *server.NodeLogs) http.Handler {
	return server.New(server.Options{Auth: &server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AlwaysAllow{}},
		NodeLogs: logs}).Handler()
}

func TestNodeLogsFileServer(t *testing.T) {
	dir := logDir(t)
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		query    bool // NodeLogs.Query
		code     int
		contains []string
		body     string
	}{
		{name: "the listing", path: "/logs/", code: 200,
			contains: []string{`<a href="foo.log">foo.log</a>`, `<a href="sub/">sub/</a>`, `<a href="myapp.log">myapp.log</a>`}},
		{name: "a file", path: "/logs/foo.log", code: 200, body: "foo line\n"},
		{name: "a file in a directory", path: "/logs/sub/bar.log", code: 200, body: "bar line\n"},
		{name: "a directory's listing", path: "/logs/sub/", code: 200, contains: []string{`<a href="bar.log">bar.log</a>`}},
		{name: "a directory without its slash", path: "/logs/sub", code: http.StatusMovedPermanently},
		{name: "a missing file", path: "/logs/nothere.log", code: 404, body: "404 page not found\n"},
		{name: "dot dot", path: "/logs/../secret", code: http.StatusTemporaryRedirect}, // to /secret, not served
		{name: "escaped dot dot", path: "/logs/..%2fsecret", code: 404},
		{name: "escaped dot dot, twice", path: "/logs/sub/..%2f..%2fsecret", code: 404},
		{name: "a link out of the directory", path: "/logs/out.log", code: 404, body: "404 page not found\n"},
		{name: "a link to a directory out of it", path: "/logs/outdir/", code: 404, body: "404 page not found\n"},
		{name: "a file in a linked directory", path: "/logs/outdir/x.log", code: 404, body: "404 page not found\n"},
		{name: "POST", method: http.MethodPost, path: "/logs/foo.log", code: http.StatusMethodNotAllowed},
		{name: "a query with queries off is the listing", path: "/logs/?query=kubelet", code: 200, contains: []string{`foo.log`}},
		{name: "a file query", path: "/logs/?query=./foo.log", query: true, code: 200, body: "foo line\n"},
		{name: "a file query in a directory", path: "/logs/?query=sub/bar.log", query: true, code: 200, body: "bar line\n"},
		{name: "a file query, absolute, as upstream", path: "/logs/?query=/foo.log", query: true, code: http.StatusNotAcceptable,
			body: `query: Invalid value: ["/foo.log"]: statat /foo.log: path escapes from parent` + "\n"},
		{name: "a file query out of the directory", path: "/logs/?query=../secret", query: true, code: http.StatusNotAcceptable,
			body: `query: Invalid value: ["../secret"]: statat ../secret: path escapes from parent` + "\n"},
		{name: "a file query through a link", path: "/logs/?query=./out.log", query: true, code: http.StatusNotAcceptable,
			body: `query: Invalid value: ["./out.log"]: statat ./out.log: path escapes from parent` + "\n"},
		{name: "no query parameter is the listing", path: "/logs/?other=1", query: true, code: 200, contains: []string{`foo.log`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			logsServer(&server.NodeLogs{Dir: dir, Query: tc.query, Journal: &fakeJournal{}}).ServeHTTP(rec, httptest.NewRequest(method, tc.path, nil))
			assert.Equal(t, tc.code, rec.Code)
			assert.NotContains(t, rec.Body.String(), "do not show")
			for _, s := range tc.contains {
				assert.Contains(t, rec.Body.String(), s)
			}
			if tc.body != "" {
				assert.Equal(t, tc.body, rec.Body.String())
			}
		})
	}
}

// Without a directory /logs/ is upstream's handler when turned off.
func TestNodeLogsDisabled(t *testing.T) {
	for _, logs := range []*server.NodeLogs{nil, {Query: true}} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			rec := httptest.NewRecorder()
			logsServer(logs).ServeHTTP(rec, httptest.NewRequest(method, "/logs/foo.log", nil))
			assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
			assert.Equal(t, "logs endpoint is disabled.\n", rec.Body.String())
		}
	}
}

func TestNodeLogsQuery(t *testing.T) {
	dir := logDir(t)
	base := []string{"--utc", "--no-pager", "--output=short-precise"}
	units := []string{"--field", "_SYSTEMD_UNIT"}
	for _, tc := range []struct {
		name    string
		path    string
		journal *fakeJournal
		code    int
		body    string
		calls   [][]string
	}{
		{name: "a service in the journal", path: "/logs/?query=kubelet&tailLines=5&boot=0",
			journal: &fakeJournal{units: []string{"kubelet.service", "containerd.service"}, output: "journal lines\n"},
			code:    200, body: "journal lines\n",
			calls: [][]string{units, append(base, "--pager-end", "--lines=5", "--unit=kubelet", "--boot", "0")}},
		{name: "two services in the journal", path: "/logs/?query=kubelet&query=containerd&sinceTime=2026-01-02T03:04:05Z&untilTime=2026-01-02T13:14:15Z&pattern=E%5B0-9%5D",
			journal: &fakeJournal{units: []string{"kubelet.service", "containerd.service"}, output: "journal lines\n"},
			code:    200, body: "journal lines\n",
			calls: [][]string{units, append(base, "--since=2026-1-2 03:4:5", "--until=2026-1-2 13:14:15", "--unit=kubelet", "--unit=containerd", "--grep=E[0-9]")}},
		{name: "a service that logs to a file", path: "/logs/?query=myapp",
			journal: &fakeJournal{units: []string{"kubelet.service"}}, code: 200, body: "myapp line\n", calls: [][]string{units}},
		{name: "a service whose file is in its directory", path: "/logs/?query=other",
			journal: &fakeJournal{units: []string{"kubelet.service"}}, code: 200, body: "other line\n", calls: [][]string{units}},
		{name: "a file of a service is a file, not the directory", path: "/logs/?query=sub",
			journal: &fakeJournal{}, code: 200, body: "\nlog not found for sub\n", calls: [][]string{units}},
		{name: "the journal and a file", path: "/logs/?query=kubelet&query=foo",
			journal: &fakeJournal{units: []string{"kubelet.service"}, output: "journal lines\n"},
			code:    200, body: "journal lines\nfoo line\n", calls: [][]string{units, append(base, "--unit=kubelet")}},
		{name: "a file with options", path: "/logs/?query=myapp&tailLines=3",
			journal: &fakeJournal{}, code: 200, body: "\noptions present and query resolved to log files for [myapp]\ntry without specifying options\n",
			calls: [][]string{units}},
		{name: "no journalctl: files only", path: "/logs/?query=myapp",
			journal: &fakeJournal{unitErr: errors.New(`exec: "journalctl": executable file not found in $PATH`)},
			code:    200, body: "myapp line\n", calls: [][]string{units}},
		{name: "a link out of the directory is not a service's file", path: "/logs/?query=out",
			journal: &fakeJournal{}, code: 200, body: "\nerror getting log for out: openat out.log: path escapes from parent\n", calls: [][]string{units}},
		{name: "journalctl failing says so itself", path: "/logs/?query=kubelet",
			journal: &fakeJournal{units: []string{"kubelet.service"}, output: "Failed to ...\n", runErr: fmt.Errorf("%w: exit status 1", server.ErrJournalFailed)},
			code:    200, body: "Failed to ...\n", calls: [][]string{units, append(base, "--unit=kubelet")}},
		{name: "journalctl not running", path: "/logs/?query=kubelet",
			journal: &fakeJournal{units: []string{"kubelet.service"}, runErr: errors.New("signal: killed")},
			code:    200, body: "\nerror: journal output not available\n", calls: [][]string{units, append(base, "--unit=kubelet")}},
		{name: "journalctl not running, an earlier boot", path: "/logs/?query=kubelet&boot=-1",
			journal: &fakeJournal{units: []string{"kubelet.service"}, runErr: errors.New("signal: killed")},
			code:    200, body: "", calls: [][]string{units, append(base, "--unit=kubelet", "--boot", "-1")}},
		{name: "a bad parameter", path: "/logs/?query=kubelet&tailLines=many", code: 400,
			body: `tailLines: Invalid value: "many": strconv.Atoi: parsing "many": invalid syntax` + "\n"},
		{name: "a path in query mode", path: "/logs/foo.log?query=kubelet", code: 406, body: "path not allowed in query mode\n"},
		{name: "an unsafe service", path: "/logs/?query=kubelet%3Brm", code: 406,
			body: `query: Invalid value: "kubelet;rm": input contains unsupported characters` + "\n"},
		{name: "five services", path: "/logs/?query=a&query=b&query=c&query=d&query=e", code: 406,
			body: "query: Too many: 5: must have at most 4 items\n"},
		{name: "options only", path: "/logs/?tailLines=5", code: 406, body: "query: Required value: cannot be empty with options\n"},
		{name: "a later boot", path: "/logs/?query=kubelet&boot=1", code: 406, body: "boot: Invalid value: 1: must be less than 1\n"},
		{name: "too many lines", path: "/logs/?query=kubelet&tailLines=100001", code: 406,
			body: "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.journal
			if j == nil {
				j = &fakeJournal{}
			}
			rec := httptest.NewRecorder()
			logsServer(&server.NodeLogs{Dir: dir, Query: true, Journal: j}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			assert.Equal(t, tc.code, rec.Code)
			assert.Equal(t, tc.body, rec.Body.String())
			assert.Equal(t, tc.calls, j.recorded())
			if tc.code == 200 {
				assert.Equal(t, "text/plain;charset=UTF-8", rec.Header().Get("Content-Type"))
			}
		})
	}
}

// A client asking for exactly gzip gets the query's answer gzipped.
func TestNodeLogsQueryGzip(t *testing.T) {
	j := &fakeJournal{units: []string{"kubelet.service"}, output: "journal lines\n"}
	req := httptest.NewRequest(http.MethodGet, "/logs/?query=kubelet", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	logsServer(&server.NodeLogs{Dir: t.TempDir(), Query: true, Journal: j}).ServeHTTP(rec, req)
	assert.Equal(t, 200, rec.Code)
	assert.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, "journal lines\n", string(b))
}

// /logs/ is nodes/log, with no fallback to proxy; the read-only server
// answers as upstream's read-only port.
func TestNodeLogsAuthorization(t *testing.T) {
	dir := logDir(t)
	checkAuthorization(t, server.Options{Node: nodeStatus{name: "node1"}, NodeLogs: &server.NodeLogs{Dir: dir, Query: true, Journal: &fakeJournal{}}}, []authCase{
		{name: "no credentials", path: "/logs/", code: 401, body: "Unauthorized"},
		{name: "log allowed", path: "/logs/foo.log", token: "alice-token", allow: []string{"log"}, code: 200, asked: []string{"log"}, body: "foo line\n"},
		{name: "a query, log allowed", path: "/logs/?query=./foo.log", token: "alice-token", allow: []string{"log"}, code: 200, asked: []string{"log"},
			body: "foo line\n"},
		{name: "proxy is not enough", path: "/logs/foo.log", token: "alice-token", allow: []string{"proxy", "configz"}, code: 403,
			asked: []string{"log"}, body: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[log])\n"},
		{name: "read-only server", path: "/logs/foo.log", readOnly: true, code: 405, body: "Debug endpoints are disabled.\n"},
	})
}

// The real journal reader runs journalctl without a shell, and tells a
// failure of journalctl from one to run it.
func TestJournalctl(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "journalctl")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\necho err >&2\n[ \"$1\" != fail ]\n"), 0o755))
	var out bytes.Buffer
	require.NoError(t, server.Journalctl{Path: script}.Run(context.Background(), []string{"--unit=a b", "--grep=$(id)"}, &out))
	assert.Equal(t, "[--unit=a b]\n[--grep=$(id)]\nerr\n", out.String())
	err := server.Journalctl{Path: script}.Run(context.Background(), []string{"fail"}, io.Discard)
	assert.ErrorIs(t, err, server.ErrJournalFailed)
	err = server.Journalctl{Path: filepath.Join(dir, "missing")}.Run(context.Background(), nil, io.Discard)
	require.Error(t, err)
	assert.NotErrorIs(t, err, server.ErrJournalFailed)
}
