// Package websockets serves the WebSocket protocols of kubectl 1.30 and
// later on a kubeletkit node's kubelet API exactly as upstream kubelet does:
// Translator is a server.WebSocketTranslator over k8s.io/apiserver's
// pkg/util/proxy, the translator upstream kubelet 1.36 itself runs for
// them. It lives in the examples module because the core imports no
// k8s.io/apiserver.
//
// # Why
//
// kubectl exec, attach and cp speak v5.channel.k8s.io over a WebSocket, and
// kubectl port-forward tunnels SPDY through one. A CRI runtime's streaming
// server speaks SPDY, so someone translates. Since Kubernetes 1.36 the API
// server leaves that to the kubelet of a node that declares the feature
// ExtendWebSocketsToKubelet in status.declaredFeatures, and forwards the
// WebSocket as it is; for any other node it translates itself and speaks
// SPDY to the kubelet, which proxies it on to the runtime: one more hop,
// where the API server's translator is known to lose the end of a session's
// output (kubernetes/kubernetes#124571: an exec's tty line, tar's last
// stderr line under kubectl cp). With Translator in
// agent.APIOptions.WebSockets, which makes the agent declare
// agent.ExtendWebSocketsToKubelet, a node gets the path upstream kubelet
// gets, translated next to the runtime by the same code:
//
//	opts.HTTP.API.WebSockets = websockets.Translator{}
//
// examples/minikubelet does so unless --extend-websockets-to-kubelet=false.
//
// # Behaviour
//
// StreamHandler is upstream's StreamTranslatorHandler: it upgrades the
// client to a v5 WebSocket with the streams asked for, opens a SPDY
// session to the runtime's exec or attach URL, copies both ways (terminal
// resizes included), passes on the client's half-close of stdin (v5's
// CLOSE), and writes the command's status, its exit code or an error, on
// the WebSocket's error channel. TunnelHandler is upstream's
// TunnelingHandler: it hands the kubelet API's proxy a SPDY upgrade for the
// runtime's port-forward URL and carries the SPDY frames in the
// WebSocket's messages; the ports travel in the SPDY streams. Like upstream
// kubelet's, neither throttles, and each dials the runtime with the
// default transport.
//
// Handlers are built per request; Translator holds no state and is safe
// for concurrent use. Tests run it on the agent's embedded fake runtime
// (cri/fake) with client-go's WebSocket executor and tunnelling
// port-forward dialer, as kubectl uses them.
package websockets
