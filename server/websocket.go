package server

import (
	"net/http"
	"net/url"

	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// WebSocketTranslator serves the WebSocket protocols of kubectl 1.30 and
// later next to the runtime, as upstream kubelet does when it declares the
// node feature ExtendWebSocketsToKubelet: exec and attach over
// v5.channel.k8s.io (with its CLOSE signal), and port forward over
// SPDY/3.1+portforward.k8s.io, SPDY tunnelled in a WebSocket. A CRI
// runtime's streaming server speaks SPDY (and the older WebSocket
// protocols) only, so these requests need a translation on the way.
//
// The core imports no k8s.io/apiserver; examples/websockets implements it
// with upstream kubelet's own translator (k8s.io/apiserver's
// pkg/util/proxy).
//
// The server calls it only for a request that asks for one of those
// protocols, once the request's options were read, the pod found and the
// runtime's streaming URL given by the Streamer; every other request is
// proxied (or redirected) as it would be without a translator. The
// translator's handlers serve a request taken over from the server's
// connection, so they may hijack it; a request they serve is never
// redirected, RedirectContainerStreaming or not, since the runtime speaks
// neither protocol. Its methods are called from the requests' goroutines.
type WebSocketTranslator interface {
	// StreamHandler returns the handler of an exec or attach request for
	// the v5 WebSocket protocol: it upgrades the client's connection to a
	// WebSocket, opens a SPDY stream to the runtime's streaming URL u with
	// the streams opts asks for, copies between the two, and ends with the
	// command's status on the WebSocket (its exit code, or an error).
	StreamHandler(u *url.URL, opts StreamOptions) http.Handler
	// TunnelHandler wraps upgrade, the proxy to the runtime's port-forward
	// URL, for a port forward whose SPDY connection comes tunnelled in a
	// WebSocket: it hands upgrade a SPDY upgrade request and carries the
	// SPDY frames in the WebSocket's messages. Such a request names its
	// ports in its SPDY streams, as a SPDY client does, and none in its
	// query.
	TunnelHandler(upgrade http.Handler) http.Handler
}

// wantsStreamTranslation reports whether an exec or attach request goes to
// the WebSocket translator: there is one, and the request asks for the v5
// WebSocket protocol (upstream kubelet's test).
func (s *Server) wantsStreamTranslation(r *http.Request) bool {
	return s.opts.WebSockets != nil && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r)
}

// wantsTunnel reports whether a port forward request goes to the WebSocket
// translator: there is one, and the request asks for a SPDY protocol
// tunnelled in a WebSocket (upstream kubelet's test).
func (s *Server) wantsTunnel(r *http.Request) bool {
	return s.opts.WebSockets != nil && wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
}
