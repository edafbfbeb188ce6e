package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/server"
)

// /metrics/probes, /metrics/cadvisor and /metrics/resource are served
// from their Options handlers on both servers, as upstream serves them on
// its secure and read-only ports; the secure server asks the authorizer
// about nodes/metrics for them, as for every path under /metrics, and
// nothing else. Without a handler the path does not exist.
func TestMetricsPaths(t *testing.T) {
	for _, path := range []string{"/metrics/probes", "/metrics/cadvisor", "/metrics/resource"} {
		t.Run(path, func(t *testing.T) { testMetricsPath(t, path) })
	}
}

func testMetricsPath(t *testing.T, path string) {
	probes := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "prober_probe_total{result=\"failed\"} 1\n")
	})
	// allow lets a user do what the subresources named allow, nothing else,
	// and records what it was asked.
	allow := func(asked *[]server.Attributes, subs ...string) *server.Auth {
		return &server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AuthorizerFunc(
			func(_ context.Context, a server.Attributes) (server.Decision, string, error) {
				*asked = append(*asked, a)
				for _, s := range subs {
					if a.Subresource == s {
						return server.DecisionAllow, "", nil
					}
				}
				return server.DecisionNoOpinion, "", nil
			})}
	}
	for _, tc := range []struct {
		name     string
		handler  http.Handler
		auth     []string // nil: the read-only server
		method   string
		code     int
		body     string
		wantSubs []string
	}{
		{name: "read-only server", handler: probes, code: http.StatusOK, body: "prober_probe_total{result=\"failed\"} 1\n"},
		{name: "secure server, metrics allowed", handler: probes, auth: []string{"metrics"}, code: http.StatusOK,
			body: "prober_probe_total{result=\"failed\"} 1\n", wantSubs: []string{"metrics"}},
		{name: "secure server, only proxy allowed", handler: probes, auth: []string{"proxy"}, code: http.StatusForbidden,
			wantSubs: []string{"metrics"}},
		{name: "secure server, no handler", auth: []string{"metrics"}, code: http.StatusNotFound, wantSubs: []string{"metrics"}},
		{name: "read-only server, no handler", code: http.StatusNotFound},
		{name: "POST", handler: probes, auth: []string{"metrics"}, method: http.MethodPost, code: http.StatusMethodNotAllowed,
			wantSubs: []string{"metrics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []server.Attributes
			opts := server.Options{Node: nodeStatus{name: "node1"}}
			switch path {
			case "/metrics/probes":
				opts.ProbeMetrics = tc.handler
			case "/metrics/cadvisor":
				opts.CadvisorMetrics = tc.handler
			default:
				opts.ResourceMetrics = tc.handler
			}
			if tc.auth != nil {
				opts.Auth = allow(&asked, tc.auth...)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			server.New(opts).Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.body != "" {
				assert.Equal(t, tc.body, rec.Body.String())
			}
			var subs []string
			for _, a := range asked {
				subs = append(subs, a.Subresource)
				assert.Equal(t, "nodes", a.Resource)
				assert.Equal(t, "node1", a.Name)
			}
			assert.Equal(t, tc.wantSubs, subs)
		})
	}
}
