package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
)

// streamOptions reads exec's and attach's streams from the request's query
// or form as upstream does: each of input, output, error and tty is on
// when "1"; with tty, stderr is dropped (a terminal has one output); at
// least one stream is needed.
func streamOptions(r *http.Request) (StreamOptions, error) {
	o := StreamOptions{
		Stdin:  r.FormValue(v1.ExecStdinParam) == "1",
		Stdout: r.FormValue(v1.ExecStdoutParam) == "1",
		Stderr: r.FormValue(v1.ExecStderrParam) == "1",
		TTY:    r.FormValue(v1.ExecTTYParam) == "1",
	}
	if o.TTY && o.Stderr {
		o.Stderr = false
	}
	if !o.Stdin && !o.Stdout && !o.Stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// portForwardPorts reads the ports of a port forward. A WebSocket client
// gives them as port query parameters (each may be a comma-separated
// list); a SPDY client names them in each stream's headers, so that there
// are none to read here, as upstream. A SPDY connection tunnelled in a
// WebSocket is a SPDY client: servePortForward does not ask for its ports.
func portForwardPorts(r *http.Request) ([]int32, error) {
	if !isWebSocket(r) {
		return nil, nil
	}
	values := r.URL.Query()[v1.PortHeader]
	if len(values) == 0 {
		return nil, fmt.Errorf("query parameter %q is required", v1.PortHeader)
	}
	var ports []int32
	for _, value := range values {
		if value == "" {
			return nil, fmt.Errorf("query parameter %q cannot be empty", v1.PortHeader)
		}
		for _, p := range strings.Split(value, ",") {
			port, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %v", value, err)
			}
			if port < 1 {
				return nil, fmt.Errorf("port %q must be > 0", value)
			}
			ports = append(ports, int32(port))
		}
	}
	return ports, nil
}

// isWebSocket reports whether r asks to upgrade to a WebSocket.
func isWebSocket(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// parsePath parses the path of a per-pod endpoint, or answers a bad one:
// 404 when it has not the endpoint's shape or a segment names nothing that
// can exist (an encoded slash, a dot segment: upstream's router sees more
// segments, or looks up a name no object has), 400 for an empty segment or
// a bad escape; the answer names the segment.
func parsePath(w http.ResponseWriter, r *http.Request, prefix string, shape pathShape) (podPath, bool) {
	p, err := parsePodPath(strings.TrimPrefix(r.URL.EscapedPath(), prefix), shape)
	var perr *pathError
	switch {
	case errors.As(err, &perr) && perr.badName:
		writeError(w, http.StatusNotFound, perr.Error())
		return p, false
	case errors.As(err, &perr):
		writeError(w, http.StatusBadRequest, perr.Error())
		return p, false
	case err != nil:
		http.NotFound(w, r)
		return p, false
	}
	return p, true
}

// lookupPod finds the pod a path names, or answers (and returns nil) when
// the server has no PodGetter, there is no such pod, or not with the
// path's UID: 404 with upstream's messages.
func (s *Server) lookupPod(w http.ResponseWriter, p podPath, shape pathShape) *v1.Pod {
	if s.opts.PodGetter == nil {
		http.Error(w, "no pod getter", http.StatusServiceUnavailable)
		return nil
	}
	pod, ok := s.opts.PodGetter.Pod(p.namespace, p.pod)
	switch {
	case (!ok || pod == nil) && shape == logsShape:
		writeError(w, http.StatusNotFound, fmt.Sprintf("pod %q does not exist", p.pod))
		return nil
	case !ok || pod == nil:
		writeError(w, http.StatusNotFound, "pod does not exist")
		return nil
	case !uidMatches(pod, p.uid):
		writeError(w, http.StatusNotFound, "pod not found")
		return nil
	}
	return pod
}

// findPod parses a per-pod path and finds its pod, or answers the request
// itself and returns nil.
func (s *Server) findPod(w http.ResponseWriter, r *http.Request, prefix string, shape pathShape) (*v1.Pod, podPath) {
	p, ok := parsePath(w, r, prefix, shape)
	if !ok {
		return nil, p
	}
	return s.lookupPod(w, p, shape), p
}

// uidMatches reports whether a path's UID names pod: none given, the
// pod's, or, for a static pod's mirror, the static pod's (which upstream
// translates from the mirror's).
func uidMatches(pod *v1.Pod, uid types.UID) bool {
	return uid == "" || pod.UID == uid || pod.Annotations[v1.MirrorPodAnnotationKey] == string(uid)
}

func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	opts, err := streamOptions(r)
	s.serveStream(w, r, "/exec/", containerShape, err, func(pod *v1.Pod, p podPath) (*url.URL, error) {
		return s.opts.Streaming.Exec(r.Context(), pod, p.container, r.URL.Query()[v1.ExecCommandParam], opts)
	}, s.streamTranslation(r, opts))
}

func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	opts, err := streamOptions(r)
	s.serveStream(w, r, "/attach/", containerShape, err, func(pod *v1.Pod, p podPath) (*url.URL, error) {
		return s.opts.Streaming.Attach(r.Context(), pod, p.container, opts)
	}, s.streamTranslation(r, opts))
}

// streamTranslation is how an exec or attach request for the v5 WebSocket
// protocol reaches the runtime when there is a WebSocketTranslator: through
// its StreamHandler. Nil for any other request.
func (s *Server) streamTranslation(r *http.Request, opts StreamOptions) streamVia {
	if !s.wantsStreamTranslation(r) {
		return nil
	}
	return func(u *url.URL) http.Handler { return s.opts.WebSockets.StreamHandler(u, opts) }
}

// servePortForward serves a port forward. A SPDY connection tunnelled in a
// WebSocket, when there is a WebSocketTranslator, names its ports in its
// SPDY streams: the query's are not read (upstream asks the runtime with
// no ports), and the proxy to the runtime goes through the translator's
// TunnelHandler.
func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	var ports []int32
	var err error
	var via streamVia
	if s.wantsTunnel(r) {
		via = func(u *url.URL) http.Handler { return s.opts.WebSockets.TunnelHandler(s.proxy(u)) }
	} else {
		ports, err = portForwardPorts(r)
	}
	s.serveStream(w, r, "/portForward/", podShape, err, func(pod *v1.Pod, _ podPath) (*url.URL, error) {
		return s.opts.Streaming.PortForward(r.Context(), pod, ports)
	}, via)
}

// streamVia gives the handler that serves a stream to the runtime's
// streaming URL u, for a request the WebSocketTranslator takes; nil means
// the usual proxy or redirect.
type streamVia func(u *url.URL) http.Handler

// serveStream serves exec, attach and port forward alike, in upstream's
// order: the request's options (optsErr, 400), the pod, the runtime's
// streaming URL from open, then the stream, through via when set.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, prefix string, shape pathShape, optsErr error,
	open func(pod *v1.Pod, p podPath) (*url.URL, error), via streamVia) {
	if optsErr != nil {
		writeError(w, http.StatusBadRequest, optsErr.Error())
		return
	}
	pod, p := s.findPod(w, r, prefix, shape)
	if pod == nil {
		return
	}
	if s.opts.Streaming == nil {
		http.Error(w, "no streamer", http.StatusServiceUnavailable)
		return
	}
	u, err := open(pod, p)
	s.stream(w, r, u, err, via)
}

// stream hands the client's connection to the runtime's streaming URL:
// through via when set (the WebSocketTranslator's handlers), else proxied
// through an upgrade-aware proxy (the client must ask for an upgrade, SPDY
// or WebSocket, else 400 "Upgrade request required"), or redirected with
// RedirectContainerStreaming.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, u *url.URL, err error, via streamVia) {
	if err == nil && u == nil {
		err = errors.New("the runtime gave no streaming URL")
	}
	if err != nil {
		writeNodeError(w, err)
		return
	}
	switch {
	case via != nil:
		via(u).ServeHTTP(w, r)
	case s.opts.RedirectContainerStreaming:
		http.Redirect(w, r, u.String(), http.StatusFound)
	default:
		s.proxy(u).ServeHTTP(w, r)
	}
}

// proxy is the upgrade-aware proxy to the runtime's streaming URL u, as
// upstream's: the client must ask for an upgrade, and a failure to reach u
// is answered 500.
func (s *Server) proxy(u *url.URL) http.Handler {
	return proxy.NewUpgradeAwareHandler(u, nil, false, true, proxyResponder{s})
}

// proxyResponder answers a failure to reach the runtime's streaming
// server, as upstream's: 500 with the error.
type proxyResponder struct{ s *Server }

func (p proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	p.s.log.Error("Error while proxying request", "path", r.URL.Path, "err", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// serveRun runs a command in a container and answers its output, as
// upstream's /run: the command is the cmd parameter split on spaces, the
// output is the body, labelled JSON whatever it is.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	pod, p := s.findPod(w, r, "/run/", containerShape)
	if pod == nil {
		return
	}
	if s.opts.Runner == nil {
		http.Error(w, "no command runner", http.StatusServiceUnavailable)
		return
	}
	cmd := strings.Split(r.URL.Query().Get("cmd"), " ")
	out, err := s.opts.Runner.RunInContainer(r.Context(), pod, p.container, cmd)
	if err != nil {
		writeNodeError(w, err)
		return
	}
	if out == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(out); err != nil {
		s.log.Warn("Failed to write a response", "path", "/run", "err", err)
	}
}
