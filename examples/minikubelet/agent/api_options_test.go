package agent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeletkit/kubeletkit/examples/minikubelet/agent"
)

func TestNewRejectsBadAPIOptions(t *testing.T) {
	rt := agent.NewFakeRuntime(nil)
	t.Cleanup(rt.Close)
	client := fake.NewClientset()
	tests := []struct {
		name string
		api  agent.APIOptions
		want string
	}{
		{"no client", agent.APIOptions{}, "API.Client is required"},
		{"negative lease", agent.APIOptions{Client: client, NodeLeaseDuration: -time.Second}, "API.NodeLeaseDuration -1s"},
		{"lease not in seconds", agent.APIOptions{Client: client, NodeLeaseDuration: 1500 * time.Millisecond}, "API.NodeLeaseDuration 1.5s"},
		{"labels without registration", agent.APIOptions{Client: client, SkipNodeRegistration: true, NodeLabels: map[string]string{"a": "b"}}, "API.SkipNodeRegistration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.New(agent.Options{Runtime: rt, NodeName: "n1", RootDir: t.TempDir(), API: &tt.api})
			require.ErrorIs(t, err, agent.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := agent.New(agent.Options{Runtime: rt, NodeName: "n1", RootDir: t.TempDir(),
		API: &agent.APIOptions{Client: client, SkipNodeRegistration: true, NodeLeaseDuration: 10 * time.Second}})
	require.NoError(t, err)
}
