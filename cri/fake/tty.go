package fake

import (
	"bytes"
	"errors"
	"io"
)

// Control characters a terminal's line discipline acts on (stty's defaults).
const (
	ctrlC     = 0x03 // intr
	ctrlD     = 0x04 // eof
	backspace = 0x08
	ctrlU     = 0x15 // kill
	del       = 0x7f // erase
)

// terminal is the input side of a pseudo-terminal in canonical mode, as a
// process reads from it: what the client types (raw, as kubectl sends it
// from a terminal in raw mode) is echoed, edited a line at a time (erase,
// kill), and handed to the reader a whole line at a time, with carriage
// returns turned into newlines. The eof character on an empty line reads as
// io.EOF, the intr character as errInterrupt; reading goes on afterwards,
// as from a real terminal. It is read by one goroutine at a time.
type terminal struct {
	src     io.Reader
	echo    io.Writer
	line    []byte
	pending []termItem
	srcErr  error
	buf     [512]byte
}

// termItem is a cooked line or an event (io.EOF, errInterrupt) for the
// reader, in the order typed.
type termItem struct {
	data []byte
	err  error
}

func newTerminal(src io.Reader, echo io.Writer) *terminal {
	return &terminal{src: src, echo: echo}
}

// Read implements io.Reader.
func (t *terminal) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.srcErr != nil {
			if errors.Is(t.srcErr, io.EOF) && len(t.line) > 0 {
				// The client's stdin ended in the middle of a line.
				t.pending = append(t.pending, termItem{data: t.line})
				t.line = nil
				break
			}
			return 0, t.srcErr
		}
		n, err := t.src.Read(t.buf[:])
		var echo bytes.Buffer
		for _, b := range t.buf[:n] {
			t.input(b, &echo)
		}
		if echo.Len() > 0 {
			if _, werr := t.echo.Write(echo.Bytes()); werr != nil && err == nil {
				err = werr
			}
		}
		t.srcErr = err
	}
	it := &t.pending[0]
	if it.err != nil {
		err := it.err
		t.pending = t.pending[1:]
		return 0, err
	}
	n := copy(p, it.data)
	if it.data = it.data[n:]; len(it.data) == 0 {
		t.pending = t.pending[1:]
	}
	return n, nil
}

// input handles one typed byte, appending what it echoes to echo.
func (t *terminal) input(b byte, echo *bytes.Buffer) {
	switch b {
	case '\r', '\n':
		t.pending = append(t.pending, termItem{data: append(t.line, '\n')})
		t.line = nil
		echo.WriteString("\r\n")
	case del, backspace:
		if len(t.line) > 0 {
			t.line = t.line[:len(t.line)-1]
			echo.WriteString("\b \b")
		}
	case ctrlU:
		for range t.line {
			echo.WriteString("\b \b")
		}
		t.line = nil
	case ctrlC:
		t.line = nil
		t.pending = append(t.pending, termItem{err: errInterrupt})
		echo.WriteString("^C\r\n")
	case ctrlD:
		if len(t.line) == 0 {
			t.pending = append(t.pending, termItem{err: io.EOF})
			return
		}
		t.pending = append(t.pending, termItem{data: t.line})
		t.line = nil
	default:
		t.line = append(t.line, b)
		echo.WriteByte(b)
	}
}

// crlf is the output side of a terminal (onlcr): every newline a process
// writes reaches the client as a carriage return and a newline.
type crlf struct{ w io.Writer }

// Write implements io.Writer.
func (c crlf) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, '\n') < 0 {
		return c.w.Write(p)
	}
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}
