package websockets

import (
	"net/http"
	"net/url"

	"k8s.io/apiserver/pkg/util/proxy"

	"github.com/kubeletkit/kubeletkit/server"
)

// Translator is upstream kubelet's WebSocket translation as a
// server.WebSocketTranslator. The zero value is ready to use.
type Translator struct{}

var _ server.WebSocketTranslator = Translator{}

// StreamHandler returns upstream's stream translator for an exec or attach
// over v5.channel.k8s.io to the runtime's streaming URL u, with the
// streams of opts, unthrottled over the default transport as upstream
// kubelet builds it.
func (Translator) StreamHandler(u *url.URL, opts server.StreamOptions) http.Handler {
	return proxy.NewStreamTranslatorHandler(u, nil, 0, proxy.Options{
		Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Tty: opts.TTY,
	})
}

// TunnelHandler returns upstream's tunnelling handler around upgrade, the
// kubelet API's proxy to the runtime's port-forward URL.
func (Translator) TunnelHandler(upgrade http.Handler) http.Handler {
	return proxy.NewTunnelingHandler(upgrade)
}
