package agent

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/server"
)

func TestAnonymousMayExec(t *testing.T) {
	webhook := server.AuthorizerFunc(func(context.Context, server.Attributes) (server.Decision, string, error) {
		return server.DecisionDeny, "", nil
	})
	for _, tc := range []struct {
		name string
		opts APIOptions
		want bool
	}{
		{"no anonymous requests", APIOptions{}, false},
		{"anonymous, no authorizer: everything allowed", APIOptions{Anonymous: true}, true},
		{"anonymous, AlwaysAllow", APIOptions{Anonymous: true, Authorizer: server.AlwaysAllow{}}, true},
		{"anonymous, an authorizer of its own", APIOptions{Anonymous: true, Authorizer: webhook}, false},
		{"AlwaysAllow without anonymous requests", APIOptions{Authorizer: server.AlwaysAllow{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, anonymousMayExec(&tc.opts)) })
	}
}
