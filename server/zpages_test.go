package server_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/server"
)

// zpagesStart is when the component of the zpage tests started; their
// clock is 1h2m3s later.
var zpagesStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func zpagesServer(t *testing.T, flags server.FlagReader, readOnly bool) http.Handler {
	t.Helper()
	clk := clocktesting.NewFakePassiveClock(zpagesStart.Add(time.Hour + 2*time.Minute + 3*time.Second))
	o := server.Options{
		Node: nodeStatus{name: "node1"}, Configz: server.ConfigProviderFunc(func() (any, error) { return struct{}{}, nil }),
		ZPages: &server.ZPages{StartTime: zpagesStart, Clock: clk, BinaryVersion: "1.36.3", EmulationVersion: "1.36",
			GoVersion: "go1.26.8", Flags: flags, Delimiter: ":"},
		NodeLogs: &server.NodeLogs{Dir: t.TempDir()},
	}
	if !readOnly {
		o.Auth = &server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AlwaysAllow{}}
	}
	return server.New(o).Handler()
}

const warning = "Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n"

// The text answers, as upstream's text serializers write them (a blank
// line, the header, the warning; statusz's fields after a blank line, the
// flags right after the warning), with ":" as the delimiter.
const (
	statuszText = "\nkubelet statusz\n" + warning + `
Started: Fri Jan  2 03:04:05 UTC 2026
Up: 1 hr 02 min 03 sec
Go version: go1.26.8
Binary version: 1.36.3
Emulation version: 1.36
Paths: /attach /checkpoint /configz /containerLogs /exec /flagz /healthz /logs /node /pods /portForward /run /runningpods /stats
`
	flagzText = "\nkubelet flagz\n" + warning + `address:0.0.0.0
cert-dir:
read-only-port:10255
token:CLASSIFIED
`
	statuszJSON = `{"kind":"Statusz","apiVersion":"config.k8s.io/%s","metadata":{"name":"kubelet"},"startTime":"2026-01-02T03:04:05Z",` +
		`"uptimeSeconds":3723,"goVersion":"go1.26.8","binaryVersion":"1.36.3","emulationVersion":"1.36",` +
		`"paths":["/attach","/checkpoint","/configz","/containerLogs","/exec","/flagz","/healthz","/logs","/node","/pods","/portForward","/run","/runningpods","/stats"]}` + "\n"
	flagzJSON = `{"kind":"Flagz","apiVersion":"config.k8s.io/%s","metadata":{"name":"kubelet"},` +
		`"flags":{"address":"0.0.0.0","cert-dir":"","read-only-port":"10255","token":"CLASSIFIED"}}` + "\n"
	notAcceptable = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
		`"message":"only the following media types are accepted: application/json, application/yaml, text/plain","reason":"NotAcceptable","code":406}` + "\n"
	notAcceptableIndented = `{
  "kind": "Status",
  "apiVersion": "v1",
  "metadata": {},
  "status": "Failure",
  "message": "only the following media types are accepted: application/json, application/yaml, text/plain",
  "reason": "NotAcceptable",
  "code": 406
}`
	statuszYAML = `apiVersion: config.k8s.io/v1beta1
binaryVersion: 1.36.3
emulationVersion: "1.36"
goVersion: go1.26.8
kind: Statusz
metadata:
  name: kubelet
paths:
- /attach
- /checkpoint
- /configz
- /containerLogs
- /exec
- /flagz
- /healthz
- /logs
- /node
- /pods
- /portForward
- /run
- /runningpods
- /stats
startTime: "2026-01-02T03:04:05Z"
uptimeSeconds: 3723
`
)

// flagSet is a command line as minikubelet's: flags set, left at their
// default, and one classified.
func flagSet(t *testing.T) server.FlagReader {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	fs.String("address", "0.0.0.0", "")
	fs.String("cert-dir", "", "")
	fs.Int("read-only-port", 0, "")
	fs.String("token", "", "")
	require.NoError(t, fs.Parse([]string{"--read-only-port=10255", "--token=s3cret"}))
	return server.FlagSetReader{FlagSet: fs, Classified: []string{"token"}}
}

func TestZPages(t *testing.T) {
	for _, tc := range []struct {
		name      string
		path      string
		method    string // GET unless set
		accept    string
		userAgent string
		code      int
		ctype     string
		warning   string
		body      string
	}{
		{name: "statusz, no Accept", path: "/statusz", code: 200, ctype: "text/plain; charset=utf-8", body: statuszText},
		{name: "statusz, text/plain", path: "/statusz", accept: "text/plain", code: 200, ctype: "text/plain; charset=utf-8", body: statuszText},
		{name: "statusz, */*", path: "/statusz", accept: "*/*", code: 200, ctype: "text/plain; charset=utf-8", body: statuszText},
		{name: "statusz, POST", path: "/statusz", method: http.MethodPost, code: 200, ctype: "text/plain; charset=utf-8", body: statuszText},
		{name: "statusz, v1beta1 JSON", path: "/statusz", accept: "application/json;v=v1beta1;g=config.k8s.io;as=Statusz", code: 200,
			ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: fmt.Sprintf(statuszJSON, "v1beta1")},
		{name: "statusz, v1alpha1 JSON, deprecated", path: "/statusz", accept: "application/json;g=config.k8s.io;v=v1alpha1;as=Statusz", code: 200,
			ctype: "application/json;g=config.k8s.io;v=v1alpha1;as=Statusz", body: fmt.Sprintf(statuszJSON, "v1alpha1"),
			warning: `299 - "This version of the statusz endpoint is deprecated. Please use a newer version."`},
		{name: "statusz, YAML", path: "/statusz", accept: "application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz", code: 200,
			ctype: "application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz", body: statuszYAML},
		{name: "statusz, bad version falls back to */*", path: "/statusz", accept: "application/json;v=foo;g=config.k8s.io;as=Statusz,*/*", code: 200,
			ctype: "text/plain; charset=utf-8", body: statuszText},
		{name: "statusz, JSON preferred by quality", path: "/statusz", accept: "text/plain;q=0.5, application/json;g=config.k8s.io;v=v1beta1;as=Statusz",
			code: 200, ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: fmt.Sprintf(statuszJSON, "v1beta1")},
		{name: "statusz, text preferred by quality", path: "/statusz", accept: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz;q=0.1, text/plain",
			code: 200, ctype: "text/plain; charset=utf-8", body: statuszText},
		{name: "statusz, the kind of flagz", path: "/statusz", accept: "application/json;v=v1beta1;g=config.k8s.io;as=Flagz", code: 406,
			ctype: "application/json", body: notAcceptableIndented},
		{name: "statusz, JSON without a kind", path: "/statusz", accept: "application/json", code: 406, ctype: "application/json", body: notAcceptable},
		{name: "statusz, JSON without a kind, curl", path: "/statusz", accept: "application/json", userAgent: "curl/8.5.0", code: 406,
			ctype: "application/json", body: notAcceptableIndented},
		{name: "statusz, JSON without as", path: "/statusz", accept: "application/json;v=v1beta1;g=config.k8s.io", code: 406,
			ctype: "application/json", body: notAcceptableIndented},
		{name: "statusz, XML", path: "/statusz", accept: "application/xml", code: 406, ctype: "application/json", body: notAcceptableIndented},
		{name: "statusz, text with a kind", path: "/statusz", accept: "text/plain;g=config.k8s.io;v=v1beta1;as=Statusz", code: 406,
			ctype: "application/json", body: notAcceptableIndented},
		{name: "statusz, pretty JSON", path: "/statusz", accept: "application/json;v=v1beta1;g=config.k8s.io;as=Statusz;pretty=1", code: 200,
			ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", body: indent(t, fmt.Sprintf(statuszJSON, "v1beta1"))},
		{name: "flagz, no Accept", path: "/flagz", code: 200, ctype: "text/plain; charset=utf-8", body: flagzText},
		{name: "flagz, text/*", path: "/flagz", accept: "text/*", code: 200, ctype: "text/plain; charset=utf-8", body: flagzText},
		{name: "flagz, v1beta1 JSON", path: "/flagz", accept: "application/json;g=config.k8s.io;v=v1beta1;as=Flagz", code: 200,
			ctype: "application/json;g=config.k8s.io;v=v1beta1;as=Flagz", body: fmt.Sprintf(flagzJSON, "v1beta1")},
		{name: "flagz, v1alpha1 JSON, deprecated", path: "/flagz", accept: "application/json;g=config.k8s.io;v=v1alpha1;as=Flagz", code: 200,
			ctype: "application/json;g=config.k8s.io;v=v1alpha1;as=Flagz", body: fmt.Sprintf(flagzJSON, "v1alpha1"),
			warning: `299 - "This version of the flagz endpoint is deprecated. Please use a newer version."`},
		{name: "flagz, the kind of statusz", path: "/flagz", accept: "application/json;g=config.k8s.io;v=v1beta1;as=Statusz", code: 406,
			ctype: "application/json", body: notAcceptableIndented},
		{name: "statusz, under the path", path: "/statusz/x", code: 404, ctype: "text/plain; charset=utf-8", body: "404 page not found\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := zpagesServer(t, flagSet(t), false)
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.userAgent != "" {
				req.Header.Set("User-Agent", tc.userAgent)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code)
			assert.Equal(t, tc.ctype, rec.Header().Get("Content-Type"))
			assert.Equal(t, tc.warning, rec.Header().Get("Warning"))
			assert.Equal(t, tc.body, rec.Body.String())
		})
	}
}

// Upstream's delimiter is chosen at random per answer, among four.
func TestZPagesRandomDelimiter(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(zpagesStart)
	h := server.New(server.Options{Auth: &server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AlwaysAllow{}},
		ZPages: &server.ZPages{StartTime: zpagesStart, Clock: clk}}).Handler()
	seen := map[string]bool{}
	for range 200 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/statusz", nil))
		for _, d := range []string{"Binary version: 0.0.0\n", "Binary version:  0.0.0\n", "Binary version= 0.0.0\n", "Binary version  0.0.0\n"} {
			if strings.Contains(rec.Body.String(), d) {
				seen[d] = true
			}
		}
	}
	assert.Len(t, seen, 4, "every delimiter in 200 answers")
}

// Without flags there is no /flagz, and statusz does not list it; without
// ZPages neither; an emulation version left out leaves its line empty.
func TestZPagesOptional(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(zpagesStart.Add(59 * time.Second))
	auth := &server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AlwaysAllow{}}
	h := server.New(server.Options{Auth: auth, ZPages: &server.ZPages{StartTime: zpagesStart, Clock: clk,
		BinaryVersion: "0.1.0", GoVersion: "go1.26.8", Delimiter: "="}}).Handler()
	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get(h, "/statusz")
	assert.Equal(t, 200, code)
	assert.Equal(t, "\nkubelet statusz\n"+warning+`
Started= Fri Jan  2 03:04:05 UTC 2026
Up= 0 hr 00 min 59 sec
Go version= go1.26.8
Binary version= 0.1.0

Paths= /attach /checkpoint /containerLogs /exec /healthz /logs /node /pods /portForward /run /runningpods /stats
`, body)
	code, _ = get(h, "/flagz")
	assert.Equal(t, 404, code)

	h = server.New(server.Options{Auth: auth}).Handler()
	for _, p := range []string{"/statusz", "/flagz"} {
		code, _ = get(h, p)
		assert.Equal(t, 404, code, p)
	}
}

// /statusz is nodes/statusz, /flagz nodes/configz, with no fallback to
// proxy; both on the secure server only (404 on the read-only one, which
// upstream builds without them).
func TestZPagesAuthorization(t *testing.T) {
	checkAuthorization(t, server.Options{Node: nodeStatus{name: "node1"}, ZPages: &server.ZPages{Flags: flagSet(t)}}, []authCase{
		{name: "statusz, no credentials", path: "/statusz", code: 401, body: "Unauthorized"},
		{name: "statusz allowed", path: "/statusz", token: "alice-token", allow: []string{"statusz"}, code: 200, asked: []string{"statusz"}},
		{name: "statusz, proxy is not enough", path: "/statusz", token: "alice-token", allow: []string{"proxy", "configz"}, code: 403,
			asked: []string{"statusz"}, body: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[statusz])\n"},
		{name: "flagz allowed by configz", path: "/flagz", token: "alice-token", allow: []string{"configz"}, code: 200, asked: []string{"configz"}},
		{name: "flagz, statusz is not enough", path: "/flagz", token: "alice-token", allow: []string{"statusz", "proxy"}, code: 403,
			asked: []string{"configz"}, body: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[configz])\n"},
		{name: "statusz, read-only server", path: "/statusz", readOnly: true, code: 404, body: "404 page not found\n"},
		{name: "flagz, read-only server", path: "/flagz", readOnly: true, code: 404, body: "404 page not found\n"},
	})
}

// authCase is a GET of path on the secure server with alice's token
// (allowed the subresources allow) or none, or on the read-only server,
// and its answer: the code, the subresources asked, the body (when set).
type authCase struct {
	name     string
	path     string
	token    string
	allow    []string
	readOnly bool
	code     int
	asked    []string
	body     string
}

// checkAuthorization runs cases against a server of o, with Auth set for
// those not read-only.
func checkAuthorization(t *testing.T, o server.Options, cases []authCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &policy{allow: map[string][]string{"alice": tc.allow}}
			o := o
			if !tc.readOnly {
				authn, err := server.NewAuthenticator(server.AuthenticatorOptions{Token: tokens})
				require.NoError(t, err)
				o.Auth = &server.Auth{Authenticator: authn, Authorizer: p}
			}
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			server.New(o).Handler().ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code)
			assert.Equal(t, tc.asked, p.subresources())
			if tc.body != "" {
				assert.Equal(t, tc.body, rec.Body.String())
			}
		})
	}
}

// indent is JSON as apimachinery's pretty serializer writes it.
func indent(t *testing.T, s string) string {
	var b bytes.Buffer
	require.NoError(t, json.Indent(&b, []byte(s), "", "  "))
	return strings.TrimSuffix(b.String(), "\n")
}
