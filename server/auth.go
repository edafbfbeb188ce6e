package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrNotFound, wrapped in an error a node interface returns, makes the
// server answer 404 Not Found.
var ErrNotFound = errors.New("not found")

// ErrBadRequest, wrapped in an error a node interface returns, makes the
// server answer 400 Bad Request.
var ErrBadRequest = errors.New("bad request")

// User is who a request comes from, as an Authenticator found it: the
// user name, UID, groups and extra attributes of Kubernetes' user.Info.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// The names Kubernetes gives to anonymous requests and to the groups every
// request falls in.
const (
	// UserAnonymous is the user an anonymous request is made as.
	UserAnonymous = "system:anonymous"
	// GroupUnauthenticated is the group of anonymous requests.
	GroupUnauthenticated = "system:unauthenticated"
	// GroupAuthenticated is added to the groups of every user an
	// authenticator built by NewAuthenticator found.
	GroupAuthenticated = "system:authenticated"
)

// Authenticator finds who sent a request. It returns ok false, and no
// error, when the request carries no credentials of the kind it checks;
// an error when it carries some that are invalid or that could not be
// checked.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u *User, ok bool, err error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*User, bool, error)

var _ Authenticator = AuthenticatorFunc(nil)

// AuthenticateRequest calls f.
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*User, bool, error) { return f(r) }

// Attributes are what an Authorizer decides on, as upstream kubelet maps a
// request: the user, the verb from the HTTP method (get, create, update,
// patch, delete), and the node's subresource the path falls under
// (nodes/stats, nodes/metrics, nodes/log, nodes/healthz, nodes/pods,
// nodes/proxy for everything else) of the node Name.
type Attributes struct {
	User        *User
	Verb        string
	APIGroup    string // always "" (core)
	APIVersion  string // always "v1"
	Resource    string // always "nodes"
	Subresource string
	Name        string // the node's name
	Path        string // the request's path, for logs and messages
}

// Decision is an Authorizer's answer.
type Decision int

// An Authorizer allows, denies, or has no opinion (which denies, unless
// another authorizer in a union allows).
const (
	DecisionNoOpinion Decision = iota
	DecisionAllow
	DecisionDeny
)

// Authorizer decides whether a user may do what a request asks.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

var _ Authorizer = AuthorizerFunc(nil)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// AlwaysAllow is an Authorizer that allows every request (upstream's
// --authorization-mode=AlwaysAllow).
type AlwaysAllow struct{}

var _ Authorizer = AlwaysAllow{}

// Authorize allows.
func (AlwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionAllow, "", nil
}

// AlwaysDeny is an Authorizer that allows nothing. Like upstream's, it
// answers no opinion, so that a union may still allow.
type AlwaysDeny struct{}

var _ Authorizer = AlwaysDeny{}

// Authorize has no opinion: everything is forbidden.
func (AlwaysDeny) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionNoOpinion, "Everything is forbidden.", nil
}

// Auth makes a Server the kubelet's secure server: every request is
// authenticated, then authorized, before any handler runs.
type Auth struct {
	// Authenticator finds the request's user; a request it finds no user
	// for, or fails on, is answered 401 Unauthorized. Nil answers every
	// request 401. NewAuthenticator builds upstream's: client
	// certificates, bearer tokens, then anonymous when enabled.
	Authenticator Authenticator
	// Authorizer decides on the request's Attributes; a request it does
	// not allow is answered 403 Forbidden. Nil forbids everything.
	Authorizer Authorizer
	// NodeName is the name in the Attributes (nodes/<name>); empty means
	// Options.Node's NodeName.
	NodeName string
}

type userKey struct{}

// UserFrom returns the user the secure server authenticated the request
// as, from the request's context.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}

// The path prefixes upstream maps to subresources of nodes.
const (
	statsPath   = "/stats/"
	metricsPath = "/metrics"
	// probeMetricsPath is under metricsPath: nodes/metrics, as upstream.
	probeMetricsPath = "/metrics/probes"
	// cadvisorMetricsPath is under metricsPath too.
	cadvisorMetricsPath = "/metrics/cadvisor"
	logsPath            = "/logs/"
	checkpointPath      = "/checkpoint/"
	statuszPath         = "/statusz"
	flagzPath           = "/flagz"
	configzPath         = "/configz"
	podsPath            = "/pods"
	healthzPath         = "/healthz"
	runningPodsPath     = "/runningpods/"
)

// isSubpath reports whether path is prefix or lies under it.
func isSubpath(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || (strings.HasPrefix(path, prefix) && path[len(prefix)] == '/')
}

// verbs maps an HTTP method to the API verb; other methods (HEAD, OPTIONS)
// map to "", as upstream's.
var verbs = map[string]string{
	http.MethodPost:   "create",
	http.MethodGet:    "get",
	http.MethodPut:    "update",
	http.MethodPatch:  "patch",
	http.MethodDelete: "delete",
}

// requestAttributes maps a request to the attributes to authorize, in the
// order to try them, as upstream kubelet (1.36, fine-grained authorization
// always on): a first, specific subresource for /pods, /runningpods/,
// /healthz and /configz, then the one every path has, proxy unless the
// path is under /stats, /metrics, /logs, /checkpoint, /statusz or /flagz.
func requestAttributes(node string, u *User, r *http.Request) []Attributes {
	path := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(path, podsPath), isSubpath(path, runningPodsPath):
		subresources = append(subresources, "pods")
	case isSubpath(path, healthzPath):
		subresources = append(subresources, "healthz")
	case isSubpath(path, configzPath):
		subresources = append(subresources, "configz")
	}
	switch {
	case isSubpath(path, statsPath):
		subresources = append(subresources, "stats")
	case isSubpath(path, metricsPath):
		subresources = append(subresources, "metrics")
	case isSubpath(path, logsPath):
		subresources = append(subresources, "log")
	case isSubpath(path, checkpointPath):
		subresources = append(subresources, "checkpoint")
	case isSubpath(path, statuszPath):
		subresources = append(subresources, "statusz")
	case isSubpath(path, flagzPath):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	attrs := make([]Attributes, len(subresources))
	for i, sub := range subresources {
		attrs[i] = Attributes{User: u, Verb: verbs[r.Method], APIVersion: "v1", Resource: "nodes",
			Subresource: sub, Name: node, Path: path}
	}
	return attrs
}

// withAuth authenticates and authorizes every request before next, and
// answers as upstream's filter: 401 "Unauthorized", 403 "Forbidden (...)"
// naming the user, verb, resource and the subresources tried, 500 when the
// authorizer fails.
func (s *Server) withAuth(next http.Handler) http.Handler {
	auth := s.opts.Auth
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth.Authenticator == nil {
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		u, ok, err := auth.Authenticator.AuthenticateRequest(r)
		if err != nil {
			// The error may quote the credentials' subject, never a secret:
			// the token authenticators say only that a token is invalid.
			s.log.Error("Unable to authenticate the request due to an error", "path", r.URL.Path, "err", err)
		}
		if err != nil || !ok || u == nil {
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		node := auth.NodeName
		if node == "" && s.opts.Node != nil {
			node = s.opts.Node.NodeName()
		}
		attrs := requestAttributes(node, u, r)
		allowed := false
		subresources := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subresources = append(subresources, a.Subresource)
			if auth.Authorizer == nil {
				continue
			}
			d, _, err := auth.Authorizer.Authorize(r.Context(), a)
			if err != nil {
				s.log.Error("Authorization error", "user", u.Name, "verb", a.Verb, "resource", a.Resource, "subresource", a.Subresource, "err", err)
				writeError(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					u.Name, a.Verb, a.Resource, a.Subresource))
				return
			}
			if d == DecisionAllow {
				allowed = true
				break
			}
		}
		if !allowed {
			s.log.Debug("Forbidden", "user", u.Name, "verb", attrs[0].Verb, "resource", attrs[0].Resource, "subresources", subresources)
			writeError(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n",
				u.Name, attrs[0].Verb, attrs[0].Resource, subresources))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}
