package websockets_test

import (
	"fmt"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/websockets"
)

// A node's kubelet API with upstream kubelet's WebSocket translation; the
// agent then declares agent.ExtendWebSocketsToKubelet, the feature that
// tells the API server to use it.
func Example() {
	opts := agent.Options{
		HTTP: agent.HTTPOptions{API: &agent.APIOptions{Listen: ":10250", WebSockets: websockets.Translator{}}},
	}
	a, err := agent.New(opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(a.NodeName() != "")
	// Output: true
}
