package agent_test

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// Options.HTTP.Healthz serves upstream's healthz port beside the read-only
// server: /healthz "ok" (ping only, as upstream's), and nothing else.
func TestHealthzPort(t *testing.T) {
	n := newNodeWith(t, agent.Options{HTTP: agent.HTTPOptions{Healthz: &agent.HealthzOptions{Listen: "127.0.0.1:0"}}})
	// It listens on a goroutine of its own, once the agent has started.
	var addr net.Addr
	require.Eventually(t, func() bool { addr = n.a.HealthzAddr(); return addr != nil }, 10*time.Second, 10*time.Millisecond)
	assert.NotEqual(t, n.a.Addr().String(), addr.String())
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/healthz/ping": http.StatusOK, "/healthz/syncloop": http.StatusNotFound,
		"/pods": http.StatusNotFound, "/metrics": http.StatusNotFound} {
		resp, err := http.Get("http://" + addr.String() + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, want, resp.StatusCode, path)
		if want == http.StatusOK {
			assert.Equal(t, "ok", string(body), path)
		}
	}
}

// A healthz port another process has does not keep the agent from
// running, as upstream's kubelet runs on (it tries the port again every
// 5s); without the option there is no healthz port.
func TestHealthzPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	n := newNodeWith(t, agent.Options{HTTP: agent.HTTPOptions{Healthz: &agent.HealthzOptions{Listen: taken.Addr().String()}}})
	assert.Nil(t, n.a.HealthzAddr())
	code, _ := n.get("/pods")
	assert.Equal(t, http.StatusOK, code, "the agent serves on")

	none := newNodeWith(t, agent.Options{})
	assert.Nil(t, none.a.HealthzAddr())
}

// New refuses a healthz address it could never listen on.
func TestNewChecksHealthzAddress(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:10248": true, ":0": true, "[::1]:10248": true,
		"": false, "127.0.0.1": false, "127.0.0.1:70000": false} {
		t.Run(addr, func(t *testing.T) {
			_, err := agent.New(agent.Options{NodeName: "node1", RootDir: t.TempDir(), Node: agent.NodeOptions{Machine: nodetest.Machine{}},
				HTTP: agent.HTTPOptions{Healthz: &agent.HealthzOptions{Listen: addr}}})
			if ok {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, agent.ErrInvalidOptions)
		})
	}
}
