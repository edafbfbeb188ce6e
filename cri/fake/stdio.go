package fake

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"github.com/kubeletkit/kubeletkit/cri"
)

// The standard output streams of a container's process.
const (
	stdoutStream = iota
	stderrStream
)

// attachBuffer bounds the output queued for one attached client that reads
// slower than the container writes; past it, the client is detached with
// errAttachOverflow rather than slowing the container (or the clock that
// drives it) down.
const attachBuffer = 4 << 20

// errAttachOverflow ends an attach session whose client fell too far
// behind.
var errAttachOverflow = fmt.Errorf("attached client fell more than %d bytes behind the container's output", attachBuffer)

// stdio is a running container's standard streams as attach sees them: what
// its process writes, fanned out to every attached client, and the stdin
// that one attached client at a time feeds. Lock order: Runtime.mu, then
// stdio.mu, then attachment.mu; nothing is written to a client under any of
// them.
type stdio struct {
	mu     sync.Mutex
	subs   map[*attachment]struct{}
	closed bool
	err    error // why it closed: nil when the container stopped

	// feed is held by the attach session feeding stdin.
	feed sync.Mutex
	// stdinClosed: a StdinOnce container's stdin was closed, once its
	// first attached client's stdin ended. Guarded by feed.
	stdinClosed bool
}

func newStdio() *stdio { return &stdio{subs: map[*attachment]struct{}{}} }

// attachment is one attached client's queue of output.
type attachment struct {
	mu     sync.Mutex
	chunks []chunk
	size   int
	done   bool
	err    error
	wake   chan struct{} // signalled when there is something to take
}

type chunk struct {
	stream int
	data   []byte
}

// subscribe adds an attached client; it fails once the streams closed.
func (s *stdio) subscribe() (*attachment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errKilled
	}
	a := &attachment{wake: make(chan struct{}, 1)}
	s.subs[a] = struct{}{}
	return a, nil
}

func (s *stdio) unsubscribe(a *attachment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, a)
}

// broadcast queues p, written to stream, for every attached client. It never
// blocks.
func (s *stdio) broadcast(stream int, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.subs) == 0 || len(p) == 0 {
		return
	}
	data := bytes.Clone(p)
	for a := range s.subs {
		a.push(chunk{stream: stream, data: data})
	}
}

// broadcastLines queues log lines (a Behavior's) for every attached client,
// as the process wrote them; a terminal turns newlines into CRLF.
func (s *stdio) broadcastLines(tty bool, stdout, stderr []string) {
	for i, lines := range [][]string{stdout, stderr} {
		if len(lines) == 0 {
			continue
		}
		text := strings.Join(lines, "\n") + "\n"
		stream := i
		if tty {
			text, stream = strings.ReplaceAll(text, "\n", "\r\n"), stdoutStream
		}
		s.broadcast(stream, []byte(text))
	}
}

// close ends every attached client's session, after the output queued for
// it: cleanly (err nil) when the container stopped.
func (s *stdio) close(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed, s.err = true, err
	for a := range s.subs {
		a.end(err)
	}
}

func (a *attachment) push(c chunk) {
	a.mu.Lock()
	switch {
	case a.done:
	case a.size+len(c.data) > attachBuffer:
		a.chunks, a.done, a.err = nil, true, errAttachOverflow
	default:
		a.chunks = append(a.chunks, c)
		a.size += len(c.data)
	}
	a.mu.Unlock()
	a.signal()
}

func (a *attachment) end(err error) {
	a.mu.Lock()
	if !a.done {
		a.done, a.err = true, err
	}
	a.mu.Unlock()
	a.signal()
}

func (a *attachment) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// take returns the queued output, and whether the session is over (and
// why).
func (a *attachment) take() ([]chunk, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	chunks := a.chunks
	a.chunks, a.size = nil, 0
	return chunks, a.done, a.err
}

// containerOut is one of a container's output streams as its process writes
// it: to the container's log and to every attached client.
type containerOut struct {
	r      *Runtime
	c      *container
	stream int
}

// Write implements io.Writer; it fails once the container stopped.
func (w containerOut) Write(p []byte) (int, error) {
	if err := w.r.containerWrite(w.c, w.stream, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// containerWrite is what c's process writes to a stream.
func (r *Runtime) containerWrite(c *container, stream int, p []byte) error {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return errKilled
	}
	r.logOutputLocked(now, c, stream, p)
	c.stdio.broadcast(stream, p)
	return nil
}

// logOutputLocked appends what c's process wrote to its log, a whole line
// at a time, as a runtime's log writer does; the rest waits for its newline
// (or for the container to stop, see flushOutputLocked).
func (r *Runtime) logOutputLocked(now int64, c *container, stream int, p []byte) {
	if c.logPath == "" {
		return
	}
	buf := append(c.partial[stream], p...)
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && len(buf) <= maxLogLineSize {
		c.partial[stream] = buf
		return
	}
	if i < 0 {
		i = len(buf)
	}
	line := string(buf[:i])
	c.partial[stream] = bytes.Clone(buf[min(i+1, len(buf)):])
	r.appendOutputLocked(now, c, stream, line)
}

// flushOutputLocked writes to the log the last line c's process wrote
// without a newline, when it stops.
func (r *Runtime) flushOutputLocked(now int64, c *container) {
	for stream, rest := range c.partial {
		if len(rest) > 0 {
			r.appendOutputLocked(now, c, stream, string(rest))
		}
		c.partial[stream] = nil
	}
}

func (r *Runtime) appendOutputLocked(now int64, c *container, stream int, text string) {
	var stdout, stderr []string
	if stream == stdoutStream {
		stdout = []string{text}
	} else {
		stderr = []string{text}
	}
	var err error
	if c.logFile != nil {
		err = appendLog(c.logFile, time.Unix(0, now), stdout, stderr)
	} else {
		err = writeLog(c.logPath, time.Unix(0, now), stdout, stderr)
	}
	if err != nil {
		r.log.Debug("container log write failed", "id", c.id, "err", err)
	}
}

// stdinProgram says what c's process does with what is written to its
// stdin: a shell with no script runs it a line at a time ("sh"), cat with
// no file echoes it ("cat"); anything else ignores it (""), as does every
// process of a container whose config has no stdin.
func (c *container) stdinProgram() string {
	argv := c.argv()
	if !c.config.GetStdin() || len(argv) == 0 {
		return ""
	}
	if isShell(argv[0]) {
		for _, a := range argv[1:] {
			if a != "-i" && a != "-s" && a != "-l" {
				return ""
			}
		}
		return "sh"
	}
	if base(argv[0]) == "cat" && (len(argv) == 1 || (len(argv) == 2 && argv[1] == "-")) {
		return "cat"
	}
	return ""
}

// sourceReader remembers how the client's stdin ended.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// runningContainer returns the running container an exec or attach session
// names, with containerd's errors.
func (r *Runtime) runningContainerLocked(id string) (*container, error) {
	c, err := r.containers.resolve(id, "container")
	if err != nil {
		return nil, fmt.Errorf("failed to find container %q in store: %w", id, err)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, fmt.Errorf("container is in %s state: %w", c.state, cri.ErrFailedPrecondition)
	}
	return c, nil
}

// attachSession serves one attach session (see StreamingServer): it copies
// what the container's process writes from now on to out and errOut until
// the container stops (nil), ctx ends, a write to the client fails, or the
// client's stdin ends on a container that keeps its own stdin open (nil).
// in feeds the container's stdin, in a goroutine that spawn starts (see
// feedStdin).
func (r *Runtime) attachSession(ctx context.Context, id string, in io.Reader, out, errOut io.Writer, tty bool, spawn func(func())) error {
	r.mu.Lock()
	c, err := r.runningContainerLocked(id)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	st := c.stdio
	a, err := st.subscribe()
	r.mu.Unlock()
	if err != nil {
		return err
	}
	defer st.unsubscribe(a)
	r.log.Debug("attached", "id", c.id)

	detached := make(chan struct{})
	if in != nil {
		spawn(func() {
			if r.feedStdin(ctx, c, st, in, tty) {
				close(detached)
			}
		})
	}
	deliver := func() (bool, error) {
		chunks, done, aerr := a.take()
		for _, ch := range chunks {
			w := out
			if ch.stream == stderrStream {
				w = errOut
			}
			if w == nil {
				continue
			}
			if _, err := w.Write(ch.data); err != nil {
				return true, err
			}
		}
		return done, aerr
	}
	for {
		if done, err := deliver(); done {
			return err
		}
		select {
		case <-a.wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-detached:
			_, err := deliver()
			return err
		}
	}
}

// feedStdin writes what the client sends to the stdin of c's process (see
// stdinProgram) until it ends. It reports whether the session should end
// (detach): when the client's stdin ended on a container that keeps its own
// open, or failed. A StdinOnce container's stdin closes with the first
// client's (unless that client has a terminal, as containerd does it), and
// a shell or cat reading it exits then; exit in the shell exits the
// container's process too. With the container's tty, what the client types
// goes through a terminal (echo, line editing, Ctrl-C, Ctrl-D) and the
// shell prints its prompt after each command.
func (r *Runtime) feedStdin(ctx context.Context, c *container, st *stdio, in io.Reader, clientTTY bool) bool {
	st.feed.Lock()
	defer st.feed.Unlock()
	src := &sourceReader{r: in}
	r.mu.Lock()
	running := c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
	prog, hasStdin, stdinOnce := c.stdinProgram(), c.config.GetStdin(), c.config.GetStdinOnce()
	if !running || !hasStdin || st.stdinClosed {
		r.mu.Unlock()
		// No stdin to feed: what the client sends goes nowhere, and its
		// end does not end the session.
		_, _ = io.Copy(io.Discard, src)
		return false
	}
	p := r.newProcLocked(c)
	p.exited = c.exited
	tty := c.config.GetTty()
	r.mu.Unlock()

	out := io.Writer(containerOut{r: r, c: c, stream: stdoutStream})
	if tty {
		p.tty = true
		p.out, p.err = crlf{out}, crlf{out}
		p.in = bufio.NewReader(newTerminal(src, out))
	} else {
		p.out, p.err = out, containerOut{r: r, c: c, stream: stderrStream}
		p.in = bufio.NewReader(src)
	}
	var code int32
	switch prog {
	case "sh":
		code = p.interactive(ctx)
	case "cat":
		if _, err := io.Copy(p.out, p.in); errors.Is(err, errInterrupt) {
			code = exitInterrupted
		}
	default:
		_, _ = io.Copy(io.Discard, p.in)
	}
	switch {
	case p.abort != nil:
		return false
	case src.err != nil && !errors.Is(src.err, io.EOF):
		return true
	case src.err != nil && !(stdinOnce && !clientTTY):
		return true
	case src.err != nil:
		st.stdinClosed = true
		if prog == "" {
			return false
		}
	}
	// The process read the end of its stdin, or ran exit: it exits.
	r.programExit(c, code)
	return false
}

// programExit makes c's process exit with code, as its program decided.
func (r *Runtime) programExit(c *container, code int32) {
	now := r.now()
	r.mu.Lock()
	defer r.unlock()
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exitLocked(now, c, code, "", "")
	}
}

// execSession serves one exec session (see StreamingServer): it runs cmd in
// the container as ExecSync would, with in as stdin and, with tty, a
// terminal between the client and the command. A non-zero exit is an
// exec.ExitError with the code, which the streaming protocol carries to the
// client; a container that stops kills the command (137).
func (r *Runtime) execSession(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.Writer, tty bool) error {
	r.mu.Lock()
	c, err := r.runningContainerLocked(id)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	p := r.newProcLocked(c)
	p.exited = c.exited
	r.mu.Unlock()
	if out == nil {
		out = io.Discard
	}
	if errOut == nil {
		errOut = io.Discard
	}
	p.out, p.err = out, errOut
	if tty {
		p.tty = true
		p.out, p.err = crlf{out}, crlf{out}
	}
	if in != nil {
		src := in
		if tty {
			src = newTerminal(in, out)
		}
		p.in = bufio.NewReader(src)
	}
	r.log.Debug("exec session", "id", c.id, "tty", tty, "stdin", in != nil)
	code := p.run(ctx, cmd)
	switch {
	case errors.Is(p.abort, errKilled):
		code = exitKilled
	case p.abort != nil:
		return p.abort
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("error executing command %v, exit code %d", cmd, code), Code: int(code)}
	}
	return nil
}
