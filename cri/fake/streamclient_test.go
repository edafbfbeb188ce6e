package fake_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// The client side of CRI's streaming protocols over SPDY, as kubectl and
// crictl speak them (the core module may not import client-go, whose
// tools/remotecommand and tools/portforward examples/fakecri tests with).

// streamEnv is a fake runtime on a fake clock with a streaming server on a
// loopback port, stopped when the test ends.
type streamEnv struct {
	*env
	srv *fake.StreamingServer
}

func newStreamEnv(t *testing.T, opts fake.Options) *streamEnv {
	t.Helper()
	e := newEnv(t, opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := fake.NewStreamingServer(e.rt, fake.StreamingOptions{Listener: lis})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := async(func() error { return srv.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		require.NoError(t, receive(t, done))
	})
	return &streamEnv{env: e, srv: srv}
}

// dial opens the SPDY connection of a streaming URL with protocol.
func dial(t *testing.T, url, protocol string) httpstream.Connection {
	t.Helper()
	rt, err := spdy.NewRoundTripper(nil)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, nil)
	require.NoError(t, err)
	req.Header.Add(httpstream.HeaderProtocolVersion, protocol)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	conn, err := rt.NewConnection(resp)
	require.NoError(t, err)
	require.Equal(t, protocol, resp.Header.Get(httpstream.HeaderProtocolVersion))
	t.Cleanup(func() { conn.Close() })
	return conn
}

// session is an exec or attach session (protocol v4).
type session struct {
	t              *testing.T
	conn           httpstream.Connection
	stdin          httpstream.Stream
	stdout, stderr *syncBuffer
	status         chan execStatus
	copies         sync.WaitGroup
}

type sessionOpts struct {
	stdin, stdout, stderr, tty bool
}

// execStatus is the v4 error stream's status object, the part a client reads.
type execStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Details struct {
		Causes []struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"causes"`
	} `json:"details"`
}

// exitCode is the exit code the status carries: 0 on success, -1 for a
// failure that is not an exit code.
func (s execStatus) exitCode() int {
	if s.Status == "Success" {
		return 0
	}
	for _, c := range s.Details.Causes {
		if c.Reason == remotecommand.ExitCodeCauseType {
			n, err := strconv.Atoi(c.Message)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// open connects to an exec or attach URL and opens the streams o asks for,
// in the order client-go opens them.
func open(t *testing.T, url string, o sessionOpts) *session {
	t.Helper()
	conn := dial(t, url, remotecommand.StreamProtocolV4Name)
	s := &session{t: t, conn: conn, stdout: newSyncBuffer(), stderr: newSyncBuffer(), status: make(chan execStatus, 1)}
	stream := func(kind string) httpstream.Stream {
		h := http.Header{}
		h.Set(remotecommand.StreamType, kind)
		st, err := conn.CreateStream(h)
		require.NoError(t, err)
		return st
	}
	errStream := stream(remotecommand.StreamTypeError)
	if o.stdin {
		s.stdin = stream(remotecommand.StreamTypeStdin)
	}
	for _, out := range []struct {
		want bool
		kind string
		buf  *syncBuffer
	}{{o.stdout, remotecommand.StreamTypeStdout, s.stdout}, {o.stderr, remotecommand.StreamTypeStderr, s.stderr}} {
		if !out.want {
			continue
		}
		st := stream(out.kind)
		s.copies.Add(1)
		go func() {
			defer s.copies.Done()
			_, _ = io.Copy(out.buf, st)
		}()
	}
	if o.tty {
		stream(remotecommand.StreamTypeResize)
	}
	go func() {
		data, _ := io.ReadAll(errStream)
		var st execStatus
		if len(data) > 0 {
			if err := json.Unmarshal(data, &st); err != nil {
				st = execStatus{Status: "Failure", Message: string(data)}
			}
		} else {
			st.Status = "Success"
		}
		s.status <- st
	}()
	return s
}

// send writes to the session's stdin.
func (s *session) send(text string) {
	s.t.Helper()
	_, err := io.WriteString(s.stdin, text)
	require.NoError(s.t, err)
}

// closeStdin ends the session's stdin. A command that stopped reading (tar
// at the end of its archive) may have ended the session already, which is
// no error to a client.
func (s *session) closeStdin() {
	_ = s.stdin.Close()
}

// wait returns the session's status once it ended, after its output.
func (s *session) wait() execStatus {
	s.t.Helper()
	st := receive(s.t, s.status)
	done := make(chan struct{})
	go func() {
		s.copies.Wait()
		close(done)
	}()
	receive(s.t, done)
	return st
}

// syncBuffer collects a stream's output and lets a test wait for some.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output contains want; the deadline only bounds a
// broken test.
func (b *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for !strings.Contains(b.String(), want) {
		select {
		case <-b.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %q in %q", want, b.String())
		}
	}
}

// forward opens one port-forward connection to port on a port-forward URL
// and returns its data and error streams. Opening the data stream fails
// when the server refused the connection at once (it resets the streams
// after writing its error), which a client sees as an error to read.
func forward(t *testing.T, url string, port int32) (data, errs httpstream.Stream, err error) {
	t.Helper()
	conn := dial(t, url, portforward.ProtocolV1Name)
	stream := func(kind string) (httpstream.Stream, error) {
		h := http.Header{}
		h.Set(portforward.StreamType, kind)
		h.Set(portforward.PortHeader, strconv.Itoa(int(port)))
		h.Set(portforward.PortForwardRequestIDHeader, "0")
		return conn.CreateStream(h)
	}
	errs, err = stream(portforward.StreamTypeError)
	require.NoError(t, err)
	data, err = stream(portforward.StreamTypeData)
	return data, errs, err
}

// tarball is an archive of entries (a name ending in / is a directory), in
// name order, as kubectl cp makes one.
func tarball(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		hdr := &tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(entries[name]))}
		if strings.HasSuffix(name, "/") {
			hdr.Mode, hdr.Typeflag, hdr.Size = 0o755, tar.TypeDir, 0
		}
		require.NoError(t, tw.WriteHeader(hdr))
		_, err := io.WriteString(tw, entries[name])
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// untar is the entries of an archive.
func untar(t *testing.T, data string) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(strings.NewReader(data))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		out[hdr.Name] = string(content)
	}
}
