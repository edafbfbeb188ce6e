package server

import (
	"context"
	"errors"
	"net/http"
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

// Authenticator finds who sent a request. It returns ok false, and no
// error, when the request carries no credentials of the kind it checks;
// an error when it carries some that are invalid or that could not be
// checked.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u *User, ok bool, err error)
}

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
