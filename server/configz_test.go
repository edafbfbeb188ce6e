package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/server"
)

// kubeletConfig stands for k8s.io/kubelet/config/v1beta1's
// KubeletConfiguration, which the core does not import.
type kubeletConfig struct {
	Kind          string `json:"kind"`
	APIVersion    string `json:"apiVersion"`
	StaticPodPath string `json:"staticPodPath,omitempty"`
}

// badJSON is a configuration that cannot be encoded.
type badJSON struct{}

func (badJSON) MarshalJSON() ([]byte, error) { return nil, errors.New("no JSON here") }

func TestConfigz(t *testing.T) {
	cfg := kubeletConfig{Kind: "KubeletConfiguration", APIVersion: "kubelet.config.k8s.io/v1beta1", StaticPodPath: "/etc/kubernetes/manifests"}
	const body = `{"kubeletconfig":{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","staticPodPath":"/etc/kubernetes/manifests"}}`
	alice := server.AuthenticatorFunc(func(r *http.Request) (*server.User, bool, error) {
		if r.Header.Get("Authorization") != "Bearer alice" {
			return nil, false, nil
		}
		return &server.User{Name: "alice"}, true, nil
	})
	// allow allows the subresources given, and records what it was asked.
	allow := func(asked *[]string, subs ...string) server.Authorizer {
		return server.AuthorizerFunc(func(_ context.Context, a server.Attributes) (server.Decision, string, error) {
			*asked = append(*asked, a.Verb+" "+a.Resource+"/"+a.Subresource+" "+a.Name)
			for _, s := range subs {
				if s == a.Subresource {
					return server.DecisionAllow, "", nil
				}
			}
			return server.DecisionNoOpinion, "", nil
		})
	}
	for _, tc := range []struct {
		name     string
		method   string                                  // GET unless set
		path     string                                  // /configz unless set
		token    string                                  // the bearer token; "alice" is known
		provider server.ConfigProvider                   // nil: one that answers the configuration
		none     bool                                    // no provider at all
		authz    func(asked *[]string) server.Authorizer // nil: allow nodes/configz
		readOnly bool
		code     int
		ctype    string
		body     string   // exact
		asked    []string // the attributes the authorizer was asked about, when set
		calls    int32    // the provider's calls
	}{{
		name: "the configuration", token: "alice", code: http.StatusOK, ctype: "application/json", body: body, calls: 1,
		asked: []string{"get nodes/configz node1"},
	}, {
		name: "nodes/proxy allows it when nodes/configz does not", token: "alice",
		authz: func(asked *[]string) server.Authorizer { return allow(asked, "proxy") },
		code:  http.StatusOK, ctype: "application/json", body: body, calls: 1,
		asked: []string{"get nodes/configz node1", "get nodes/proxy node1"},
	}, {
		name: "POST is served too, as create", method: http.MethodPost, token: "alice",
		code: http.StatusOK, ctype: "application/json", body: body, calls: 1,
		asked: []string{"create nodes/configz node1"},
	}, {
		name: "HEAD", method: http.MethodHead, token: "alice", code: http.StatusOK, ctype: "application/json", calls: 1,
	}, {
		name: "no credentials", code: http.StatusUnauthorized, ctype: "text/plain; charset=utf-8", body: "Unauthorized",
		asked: []string{},
	}, {
		name: "an unknown token", token: "mallory", code: http.StatusUnauthorized, body: "Unauthorized", asked: []string{},
	}, {
		name: "forbidden", token: "alice",
		authz: func(asked *[]string) server.Authorizer { return allow(asked, "stats") },
		code:  http.StatusForbidden, ctype: "text/plain; charset=utf-8",
		body:  "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[configz proxy])\n",
		asked: []string{"get nodes/configz node1", "get nodes/proxy node1"},
	}, {
		name: "an authorizer error", token: "alice",
		authz: func(*[]string) server.Authorizer {
			return server.AuthorizerFunc(func(context.Context, server.Attributes) (server.Decision, string, error) {
				return server.DecisionNoOpinion, "", errors.New("webhook down")
			})
		},
		code: http.StatusInternalServerError,
		body: "Authorization error (user=alice, verb=get, resource=nodes, subresource=configz)",
	}, {
		name: "the provider fails", token: "alice",
		provider: server.ConfigProviderFunc(func() (any, error) { return nil, errors.New("not built yet") }),
		code:     http.StatusInternalServerError, ctype: "text/plain; charset=utf-8",
		body: "error getting the configuration: not built yet\n",
	}, {
		name: "a configuration that does not encode", token: "alice",
		provider: server.ConfigProviderFunc(func() (any, error) { return badJSON{}, nil }),
		code:     http.StatusInternalServerError, ctype: "text/plain; charset=utf-8",
		body: "error marshaling json: json: error calling MarshalJSON for type server_test.badJSON: no JSON here\n",
	}, {
		name: "no provider", token: "alice", none: true, code: http.StatusNotFound,
	}, {
		name: "a path under it", path: "/configz/kubeletconfig", token: "alice", code: http.StatusNotFound,
	}, {
		name: "the read-only server does not serve it", readOnly: true, code: http.StatusNotFound,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			provider := tc.provider
			if provider == nil && !tc.none {
				provider = server.ConfigProviderFunc(func() (any, error) { calls.Add(1); return cfg, nil })
			}
			var asked []string
			authz := allow(&asked, "configz")
			if tc.authz != nil {
				authz = tc.authz(&asked)
			}
			opts := server.Options{Node: nodeStatus{name: "node1"}, Configz: provider,
				Auth: &server.Auth{Authenticator: alice, Authorizer: authz}}
			if tc.readOnly {
				opts.Auth = nil
			}
			method, path := tc.method, tc.path
			if method == "" {
				method = http.MethodGet
			}
			if path == "" {
				path = "/configz"
			}
			req := httptest.NewRequest(method, path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			server.New(opts).Handler().ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.body != "" {
				assert.Equal(t, tc.body, rec.Body.String())
			}
			if tc.ctype != "" {
				assert.Equal(t, tc.ctype, rec.Header().Get("Content-Type"))
				assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
			}
			if tc.asked != nil {
				if len(tc.asked) == 0 {
					assert.Empty(t, asked)
				} else {
					assert.Equal(t, tc.asked, asked)
				}
			}
			assert.Equal(t, tc.calls, calls.Load(), "the provider's calls")
		})
	}
}
