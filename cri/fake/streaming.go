package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Defaults of StreamingOptions: upstream's (the streaming library's, which
// containerd and the kubelet use).
const (
	// DefaultStreamIdleTimeout closes a streaming session idle this long.
	DefaultStreamIdleTimeout = 4 * time.Hour
	// DefaultStreamCreationTimeout bounds how long a client takes to open
	// the streams of a session once connected.
	DefaultStreamCreationTimeout = 30 * time.Second
)

// ErrStreamingAttached is wrapped by the error of NewStreamingServer for a
// runtime that already has one.
var ErrStreamingAttached = errors.New("the runtime already has a streaming server")

// StreamingOptions configures NewStreamingServer.
type StreamingOptions struct {
	// Listener is where the server accepts connections (a TCP listener, as
	// the URLs are http://). Required; Run closes it.
	Listener net.Listener
	// BaseURL is what the URLs that Exec, Attach and PortForward return
	// start with. nil means http://ADDRESS/ with the listener's address; set
	// it when clients reach the server at another address (a proxy, or a
	// listener on an unspecified address such as :0).
	BaseURL *url.URL
	// IdleTimeout closes a session idle this long. 0 means
	// DefaultStreamIdleTimeout.
	IdleTimeout time.Duration
	// CreationTimeout bounds how long a client takes to open the streams of
	// a session. 0 means DefaultStreamCreationTimeout.
	CreationTimeout time.Duration
}

// StreamingServer serves the streaming sessions of a Runtime: exec, attach
// and port-forward over HTTP, with the SPDY and WebSocket protocols that
// kubectl, the kubelet, crictl and critest speak (k8s.io/cri-streaming, the
// server containerd and CRI-O embed). While it serves, the runtime's Exec,
// Attach and PortForward return URLs on it, each good for one session
// within a minute, as a runtime's are. Create it with NewStreamingServer and
// serve with Run.
type StreamingServer struct {
	rt   *Runtime
	base string
	lis  *trackingListener
	lib  streaming.Server
	http *http.Server

	mu       sync.Mutex
	ctx      context.Context // Run's; sessions end with it
	sessions sync.WaitGroup  // guarded by mu against Add after stopping
	stopping bool
}

// NewStreamingServer makes rt a streaming runtime: from now on until Run
// returns, its Exec, Attach and PortForward return URLs on this server.
// opts.Listener is required (an error wrapping cri.ErrInvalidArgument), and
// a runtime has one streaming server at a time (ErrStreamingAttached). It
// starts no goroutine: Run serves.
func NewStreamingServer(rt *Runtime, opts StreamingOptions) (*StreamingServer, error) {
	if rt == nil || opts.Listener == nil {
		return nil, fmt.Errorf("new streaming server: a runtime and a listener are required: %w", cri.ErrInvalidArgument)
	}
	base := opts.BaseURL
	if base == nil {
		base = &url.URL{Scheme: "http", Host: opts.Listener.Addr().String(), Path: "/"}
	}
	cfg := streaming.DefaultConfig
	cfg.Addr = opts.Listener.Addr().String()
	cfg.BaseURL = base
	if opts.IdleTimeout > 0 {
		cfg.StreamIdleTimeout = opts.IdleTimeout
	}
	if opts.CreationTimeout > 0 {
		cfg.StreamCreationTimeout = opts.CreationTimeout
	}
	s := &StreamingServer{rt: rt, base: base.String(), lis: &trackingListener{Listener: opts.Listener, conns: map[*trackedConn]struct{}{}}}
	lib, err := streaming.NewServer(cfg, sessionRuntime{s})
	if err != nil {
		return nil, fmt.Errorf("new streaming server: %w", err)
	}
	s.lib = lib
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 30 * time.Second,
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.streamer != nil {
		return nil, fmt.Errorf("new streaming server: %w", ErrStreamingAttached)
	}
	rt.streamer = s
	return s, nil
}

// URL is what the URLs of the server's sessions start with (the BaseURL).
func (s *StreamingServer) URL() string { return s.base }

// Run serves until ctx ends. Then it detaches from the runtime (its Exec,
// Attach and PortForward fail with cri.ErrUnimplemented again), closes the
// listener and every connection, ends every session, and returns once every
// goroutine it started has ended: nil, or the error that stopped the
// listener. Run is called once.
func (s *StreamingServer) Run(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	s.http.BaseContext = func(net.Listener) context.Context { return ctx }
	served := make(chan error, 1)
	go func() { served <- s.http.Serve(s.lis) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}

	s.rt.mu.Lock()
	if s.rt.streamer == s {
		s.rt.streamer = nil
	}
	s.rt.mu.Unlock()
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	_ = s.http.Close()
	s.lis.closeAll()
	if err == nil {
		<-served
	}
	s.sessions.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// track counts a session or request in flight, unless the server is
// stopping; done must be called when it ends.
func (s *StreamingServer) track() (done func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, false
	}
	s.sessions.Add(1)
	return s.sessions.Done, true
}

// spawn runs f in a goroutine that Run waits for.
func (s *StreamingServer) spawn(f func()) {
	done, ok := s.track()
	if !ok {
		return
	}
	go func() {
		defer done()
		f()
	}()
}

// serveHTTP hands a request to the streaming library, counting it.
func (s *StreamingServer) serveHTTP(w http.ResponseWriter, req *http.Request) {
	done, ok := s.track()
	if !ok {
		http.Error(w, "the streaming server is stopping", http.StatusServiceUnavailable)
		return
	}
	defer done()
	s.lib.ServeHTTP(w, req)
}

// context is Run's ctx, for the sessions the library starts without one.
func (s *StreamingServer) context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

// sessionRuntime is what the streaming library calls for each session.
type sessionRuntime struct{ s *StreamingServer }

var _ streaming.Runtime = sessionRuntime{}

// Exec implements streaming.Runtime.
func (sr sessionRuntime) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	sr.drain(resize)
	return sr.s.rt.execSession(ctx, containerID, cmd, in, writer(out), writer(errOut), tty)
}

// Attach implements streaming.Runtime.
func (sr sessionRuntime) Attach(ctx context.Context, containerID string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	sr.drain(resize)
	return sr.s.rt.attachSession(ctx, containerID, in, writer(out), writer(errOut), tty, sr.s.spawn)
}

// PortForward implements streaming.Runtime. The library calls it from a
// goroutine of its own, without a ctx: the session ends with Run's.
func (sr sessionRuntime) PortForward(_ context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	done, ok := sr.s.track()
	if !ok {
		return errors.New("the streaming server is stopping")
	}
	defer done()
	err := sr.s.rt.portForward(sr.s.context(), sandboxID, port, stream, sr.s.spawn)
	if err != nil {
		awaitReply(stream, closeGrace)
	}
	return err
}

// awaitReply returns once the data stream's reply has gone out to the
// client, or after limit. The library answers a refused connection by
// writing the error on the error stream, then resetting and closing both
// streams; spdystream's Close waits until the stream's reply (SYN_REPLY)
// was sent, and the connection's reader sends it just after handing the
// stream over, concurrently with this call. A client that reads the error
// and hangs up before that reply leaves the Close waiting forever: a
// goroutine lost per refused connection. An empty write waits for the
// reply too (it sends an empty data frame, which clients ignore), so the
// refusal reaches the client only after the reply. limit bounds the wait
// for a client that is gone already; that goroutine then stays, as the
// library's would.
func awaitReply(stream io.Writer, limit time.Duration) {
	replied := make(chan struct{})
	go func() {
		defer close(replied)
		_, _ = stream.Write(nil)
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-replied:
	case <-t.C:
	}
}

// drain reads the terminal size changes the client sends (the fake's
// terminals have no size), so that the library never waits to deliver one.
func (sr sessionRuntime) drain(resize <-chan remotecommand.TerminalSize) {
	if resize == nil {
		return
	}
	sr.s.spawn(func() {
		for range resize {
		}
	})
}

// writer is w as an io.Writer, nil when the client did not ask for the
// stream.
func writer(w io.WriteCloser) io.Writer {
	if w == nil {
		return nil
	}
	return w
}

// trackingListener remembers the connections it accepted, hijacked ones
// included (an http.Server forgets those), so that Run can close them all.
type trackingListener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

type trackedConn struct {
	net.Conn
	l    *trackingListener
	once sync.Once
}

// Accept implements net.Listener.
func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	l.conns[tc] = struct{}{}
	return tc, nil
}

// Close implements net.Conn.
func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// closeAll closes the listener and every connection it accepted.
func (l *trackingListener) closeAll() {
	l.mu.Lock()
	l.closed = true
	conns := make([]*trackedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	_ = l.Listener.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}
