package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Options say what ReadLogs reads. The zero value reads the whole file
// once, without timestamps.
type Options struct {
	// TailLines, when set, starts at the last TailLines lines of the file
	// (0: none; negative: all). A line the runtime split into partial
	// entries counts once.
	TailLines *int64
	// SinceTime, when not zero, skips the lines whose runtime timestamp is
	// before it.
	SinceTime time.Time
	// Timestamps puts each line's runtime timestamp (TimeFormat) and a
	// space in front of it.
	Timestamps bool
	// Follow keeps reading what the container writes, across log
	// rotation, until the container is no longer running and the file is
	// read to its end, or ctx ends.
	Follow bool
	// LimitBytes, when set, stops after that many bytes have been written
	// (timestamps included), cutting the last line.
	LimitBytes *int64

	// Clock times the follower's checks of the container's state; nil is
	// the real clock.
	Clock clock.Clock
	// Logger receives the malformed lines skipped (their place, never
	// their content); nil discards.
	Logger *slog.Logger
}

// NewOptions converts the API's PodLogOptions as the kubelet does:
// SinceSeconds counts back from now, and SinceTime wins when it is later.
// Previous, Container, InsecureSkipTLSVerifyBackend and Stream are the
// caller's to act on (which container, which writer gets which stream).
// A nil o is the zero Options.
func NewOptions(o *v1.PodLogOptions, now time.Time) *Options {
	opts := &Options{}
	if o == nil {
		return opts
	}
	opts.Follow, opts.Timestamps = o.Follow, o.Timestamps
	if o.TailLines != nil {
		n := *o.TailLines
		opts.TailLines = &n
	}
	if o.LimitBytes != nil {
		n := *o.LimitBytes
		opts.LimitBytes = &n
	}
	if o.SinceSeconds != nil {
		opts.SinceTime = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	}
	if o.SinceTime != nil && o.SinceTime.After(opts.SinceTime) {
		opts.SinceTime = o.SinceTime.Time
	}
	return opts
}

// ContainerStatuser reports a container's status: the one method of
// cri.ContainerManager that ReadLogs needs to know whether a followed
// container still runs. cri.RuntimeService and fake.Runtime implement it.
type ContainerStatuser interface {
	// ContainerStatus returns the status of one container.
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// ContainerStatusFunc adapts a function to ContainerStatuser.
type ContainerStatusFunc func(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)

// ContainerStatus calls f.
func (f ContainerStatusFunc) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return f(ctx, containerID, verbose)
}

var _ ContainerStatuser = ContainerStatusFunc(nil)

// ctxCheckLines is how many lines are read between two looks at ctx
// when not following.
const ctxCheckLines = 4096

// ReadLogs reads the container log file at path (CRI format, or docker
// JSON) and writes the container's lines to stdout and stderr, as opts
// say. A nil writer drops its stream (and its bytes do not count against
// LimitBytes), as for a request for one stream. containerID and rt are
// needed only to follow: the follower asks rt whether the container still
// runs when no new line has come for a second, and ends once it does not
// and the file is read to its end.
//
// The errors are upstream's: a path that does not exist fails with
// "failed to try resolving symlinks in path ..." (and errors.Is
// fs.ErrNotExist); a file whose first line read is in no known format
// fails with "failed to get parse function: unsupported log format: ...";
// a malformed line after that is skipped (and logged without its content).
// Reaching LimitBytes, or TailLines without Follow, is a success. When ctx
// ends while following, the error is ctx's.
func ReadLogs(ctx context.Context, path, containerID string, opts *Options, rt ContainerStatuser, stdout, stderr io.Writer) error {
	if opts == nil {
		opts = &Options{}
	}
	if opts.Follow && (containerID == "" || rt == nil) {
		return errors.New("following a log needs the container's ID and a runtime to ask for its status")
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("failed to try resolving symlinks in path %q: %w", path, err)
	}
	f, err := os.Open(resolved)
	if err != nil {
		return fmt.Errorf("failed to open log file %q: %w", resolved, err)
	}
	r := &reader{
		path:  resolved,
		f:     f,
		br:    newBufReader(f),
		out:   newOutput(opts, stdout, stderr),
		log:   opts.Logger,
		lines: -1,
	}
	defer r.close()
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	tail := int64(-1)
	if opts.TailLines != nil {
		tail = *opts.TailLines
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("failed to stat log file %q: %w", resolved, err)
	}
	start, err := tailStart(f, st.Size(), tail)
	if err != nil {
		return fmt.Errorf("failed to tail %d lines of log file %q: %w", tail, resolved, err)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("failed to seek %d in log file %q: %w", start, resolved, err)
	}
	r.offset = start
	if tail >= 0 && !opts.Follow {
		// Stop after the lines that were there, even if more come.
		r.lines = tail
	}
	var fw *follower
	if opts.Follow {
		clk := opts.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		fw = newFollower(resolved, containerID, rt, clk, r.log, st)
		defer fw.close()
	}
	err = r.run(ctx, fw)
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// reader reads one log file after another (when rotation replaces the
// file) and writes their entries to the output.
type reader struct {
	path    string
	f       *os.File
	br      *bufio.Reader
	offset  int64  // of the next line in f
	pending []byte // an incomplete line read so far
	format  Format
	out     *output
	log     *slog.Logger
	lines   int64 // lines left to read; -1: no limit
	count   int
}

func (r *reader) close() {
	if r.f != nil {
		_ = r.f.Close()
	}
	if r.br != nil {
		r.br.Reset(nil)
		bufReaders.Put(r.br)
		r.br = nil
	}
}

// bufReaders keeps the readers' 64 KiB buffers between requests: a tail
// of 100 lines reads a few KiB, and allocating the buffer cost more than
// reading them.
var bufReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

func newBufReader(f *os.File) *bufio.Reader {
	br := bufReaders.Get().(*bufio.Reader)
	br.Reset(f)
	return br
}

// run reads lines until the end (without a follower), or until the
// follower says the container is done.
func (r *reader) run(ctx context.Context, fw *follower) error {
	for r.lines != 0 && !r.out.done() {
		line, err := r.next()
		if err == nil {
			if err := r.handle(line, true); err != nil {
				return err
			}
			if r.count++; fw == nil && r.count%ctxCheckLines == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if err != io.EOF {
			return fmt.Errorf("failed to read log file %q: %w", r.path, err)
		}
		if fw == nil {
			return r.flushPending()
		}
		act, err := fw.atEOF(ctx)
		if err != nil {
			return err
		}
		switch act {
		case followDone:
			return r.flushPending()
		case followSwitch:
			if err := r.flushPending(); err != nil {
				return err
			}
			_ = r.f.Close()
			r.f = fw.takeNext()
			r.br.Reset(r.f)
			r.offset = 0
		}
	}
	return nil
}

// next returns the next complete line without its newline; the slice is
// valid until the following call. At the end of the file it returns
// io.EOF and keeps what it read of an incomplete line, which the next
// call continues once more has been written.
func (r *reader) next() ([]byte, error) {
	for {
		b, err := r.br.ReadSlice('\n')
		r.offset += int64(len(b))
		switch {
		case err == nil && len(r.pending) == 0:
			return b[:len(b)-1], nil
		case err == nil:
			r.pending = append(r.pending, b...)
			line := r.pending[:len(r.pending)-1]
			r.pending = r.pending[:0]
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.pending = append(r.pending, b...)
		default:
			r.pending = append(r.pending, b...)
			return nil, err
		}
	}
}

// flushPending writes an incomplete last line as it is, as upstream does
// at the end of a read.
func (r *reader) flushPending() error {
	if len(r.pending) == 0 {
		return nil
	}
	line := r.pending
	r.pending = r.pending[:0]
	return r.handle(line, false)
}

// handle parses one line and writes its entry.
func (r *reader) handle(line []byte, terminated bool) error {
	if r.format == 0 {
		f, err := DetectFormat(line)
		if err != nil {
			return fmt.Errorf("failed to get parse function: %w", err)
		}
		r.format = f
	}
	var e Entry
	if r.format.Parse(line, &e) != nil {
		// The line, and so the parse error quoting parts of it, may hold
		// anything the container printed: say where it is, not what it
		// says.
		r.log.Error("Failed when parsing line in log file", "path", r.path,
			"offset", r.offset-int64(len(line))-1, "length", len(line), "format", r.format)
		r.countLine()
		return nil
	}
	if err := r.out.write(&e, terminated); err != nil {
		return err
	}
	if !e.Partial {
		r.countLine()
	}
	return nil
}

func (r *reader) countLine() {
	if r.lines > 0 {
		r.lines--
	}
}
