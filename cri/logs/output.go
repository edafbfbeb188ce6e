package logs

import (
	"errors"
	"io"
	"math"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// errLimitReached ends a read that has written Options.LimitBytes bytes.
var errLimitReached = errors.New("log byte limit reached")

// errShortWrite is a writer that took fewer bytes than it was given
// without an error.
var errShortWrite = errors.New("short write")

// streamState is where the output of one stream is: in the middle of a
// line (its last entry was partial), and whether that line is skipped
// (older than Options.SinceTime).
type streamState struct {
	midLine bool
	skip    bool
}

// output writes entries to stdout and stderr as the options say. The two
// streams are followed apart: a partial stdout entry continues with the
// next stdout entry, whatever stderr entries come between.
type output struct {
	stdout, stderr io.Writer
	since          time.Time
	timestamps     bool
	remain         int64 // bytes left under LimitBytes
	state          [2]streamState
	buf            []byte
}

func newOutput(opts *Options, stdout, stderr io.Writer) *output {
	o := &output{
		stdout:     stdout,
		stderr:     stderr,
		since:      opts.SinceTime,
		timestamps: opts.Timestamps,
		remain:     math.MaxInt64,
	}
	if opts.LimitBytes != nil {
		o.remain = *opts.LimitBytes
	}
	return o
}

// done reports whether the byte limit has been reached.
func (o *output) done() bool { return o.remain <= 0 }

// write writes e. The timestamp prefix goes in front of the first entry of
// each line, and a line is skipped whole when its first entry is older
// than since (upstream judges each entry by its own time). terminated says
// whether the file's line ended with a newline: an unterminated last line
// is written without one, as upstream does. It returns errLimitReached once
// LimitBytes bytes have been written, cutting the entry that crosses the
// limit, and an error of the stream's writer as is. Bytes for a stream
// whose writer is nil are neither written nor counted (the caller asked
// for the other stream only).
func (o *output) write(e *Entry, terminated bool) error {
	st := &o.state[0]
	w := o.stdout
	if e.Stream == runtimeapi.Stderr {
		st, w = &o.state[1], o.stderr
	}
	newLine := !st.midLine
	if newLine {
		st.skip = e.Time.Before(o.since)
	}
	st.midLine = e.Partial
	if st.skip || w == nil {
		return nil
	}
	b := o.buf[:0]
	if o.timestamps && newLine {
		b = e.Time.AppendFormat(b, TimeFormat)
		b = append(b, ' ')
	}
	b = append(b, e.Content...)
	if !e.Partial && terminated {
		b = append(b, '\n')
	}
	o.buf = b
	if int64(len(b)) > o.remain {
		b = b[:o.remain]
	}
	n, err := w.Write(b)
	o.remain -= int64(n)
	switch {
	case err != nil:
		return err
	case n < len(b):
		return errShortWrite
	case o.remain <= 0:
		return errLimitReached
	}
	return nil
}
