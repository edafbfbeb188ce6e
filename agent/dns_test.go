package agent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// New refuses cluster DNS that is not an IP address and a cluster domain
// with white space, naming the field.
func TestNewChecksDNS(t *testing.T) {
	for _, tc := range []struct {
		name  string
		node  agent.NodeOptions
		field string // "": New succeeds
	}{
		{"dual-stack cluster DNS", agent.NodeOptions{ClusterDNS: []string{"10.96.0.10", "fd00::a"}, ClusterDomain: "cluster.local", ResolvConf: "/nonexistent"}, ""},
		{"a name as cluster DNS", agent.NodeOptions{ClusterDNS: []string{"kube-dns"}}, "Node.ClusterDNS"},
		{"a CIDR as cluster DNS", agent.NodeOptions{ClusterDNS: []string{"10.96.0.10/32"}}, "Node.ClusterDNS"},
		{"a domain with a space", agent.NodeOptions{ClusterDomain: "cluster local"}, "Node.ClusterDomain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := agent.Options{NodeName: "node1", RootDir: t.TempDir(), Node: tc.node}
			opts.Node.Machine = nodetest.Machine{}
			_, err := agent.New(opts)
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, agent.ErrInvalidOptions)
			assert.ErrorContains(t, err, tc.field)
		})
	}
}
