package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TimeFormat is how a timestamp is printed in front of a line when
// Options.Timestamps is set: RFC 3339 with nine fraction digits always, so
// that the prefixes of all lines have the same width (upstream's
// RFC3339NanoFixed).
const TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// timeFormatIn is how a runtime's timestamps are read: RFC 3339 with zero
// to nine fraction digits, as containerd and CRI-O write them.
const timeFormatIn = "2006-01-02T15:04:05.999999999Z07:00"

// Entry is one line of a container log file, parsed.
type Entry struct {
	// Time is when the runtime read the content from the container.
	Time time.Time
	// Stream is stdout or stderr.
	Stream runtimeapi.LogStreamType
	// Content is what the container wrote, without the newline that
	// ends the file's line. It aliases the parsed line.
	Content []byte
	// Partial says the container's line goes on in the next entry of the
	// same stream: the CRI "P" tag, or a docker JSON entry whose log does
	// not end with a newline.
	Partial bool
}

// Format is a container log file format.
type Format int

const (
	// FormatCRI is the CRI format that containerd and CRI-O write:
	//
	//	2016-10-06T00:17:09.669794202Z stdout P log content 1
	//	2016-10-06T00:17:09.669794203Z stderr F log content 2
	FormatCRI Format = iota + 1
	// FormatDockerJSON is the json-file format of docker (and of
	// cri-dockerd), which upstream's reader still accepts:
	//
	//	{"log":"content 1\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}
	FormatDockerJSON
)

// String returns "cri" or "docker-json".
func (f Format) String() string {
	switch f {
	case FormatCRI:
		return "cri"
	case FormatDockerJSON:
		return "docker-json"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Parse parses one line (without its trailing newline) in format f into e.
func (f Format) Parse(line []byte, e *Entry) error {
	switch f {
	case FormatCRI:
		return ParseCRILog(line, e)
	case FormatDockerJSON:
		return ParseDockerJSONLog(line, e)
	}
	return fmt.Errorf("unsupported log format %d", int(f))
}

// DetectFormat returns the format that parses line, trying CRI first and
// then docker JSON, as upstream chooses the format of a file from the first
// line it reads.
func DetectFormat(line []byte) (Format, error) {
	var e Entry
	if ParseCRILog(line, &e) == nil {
		return FormatCRI, nil
	}
	if ParseDockerJSONLog(line, &e) == nil {
		return FormatDockerJSON, nil
	}
	return 0, fmt.Errorf("unsupported log format: %q", line)
}

// ParseCRILog parses one line of the CRI log format, without its trailing
// newline: a timestamp, the stream, the tags (P for a partial line, F for
// the end of one; further tags after a ':' are ignored, as the format
// reserves them) and the content, separated by single spaces. A carriage
// return before the newline is content. The errors are upstream's.
func ParseCRILog(line []byte, e *Entry) error {
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return errors.New("timestamp is not found")
	}
	ts, err := parseTime(line[:i])
	if err != nil {
		return fmt.Errorf("unexpected timestamp format %q: %w", timeFormatIn, err)
	}
	line = line[i+1:]
	i = bytes.IndexByte(line, ' ')
	if i < 0 {
		return errors.New("stream type is not found")
	}
	stream, ok := streamType(line[:i])
	if !ok {
		return fmt.Errorf("unexpected stream type %q", line[:i])
	}
	line = line[i+1:]
	i = bytes.IndexByte(line, ' ')
	if i < 0 {
		return errors.New("log tag is not found")
	}
	tag := line[:i]
	if j := bytes.IndexByte(tag, runtimeapi.LogTagDelimiter[0]); j >= 0 {
		tag = tag[:j]
	}
	e.Time = ts
	e.Stream = stream
	e.Content = line[i+1:]
	e.Partial = string(tag) == string(runtimeapi.LogTagPartial)
	return nil
}

// streamType returns the stream b names.
func streamType(b []byte) (runtimeapi.LogStreamType, bool) {
	switch string(b) {
	case string(runtimeapi.Stdout):
		return runtimeapi.Stdout, true
	case string(runtimeapi.Stderr):
		return runtimeapi.Stderr, true
	}
	return "", false
}

// dockerJSONLine is one entry of docker's json-file log driver.
type dockerJSONLine struct {
	Log    string    `json:"log,omitempty"`
	Stream string    `json:"stream,omitempty"`
	Time   time.Time `json:"time"`
}

// ParseDockerJSONLog parses one line of docker's json-file format. The
// entry is partial when its log does not end with a newline (docker splits
// lines longer than 16 KiB so). Unlike upstream, which fails the whole read
// on an entry whose stream is neither stdout nor stderr, such an entry is a
// parse error, so that the reader skips it as any other malformed line.
func ParseDockerJSONLog(line []byte, e *Entry) error {
	var l dockerJSONLine
	if err := json.Unmarshal(line, &l); err != nil {
		return fmt.Errorf("failed with %v to unmarshal log %q", err, line)
	}
	stream, ok := streamType([]byte(l.Stream))
	if !ok {
		return fmt.Errorf("unexpected stream type %q", l.Stream)
	}
	content := []byte(l.Log)
	partial := len(content) == 0 || content[len(content)-1] != '\n'
	if !partial {
		content = content[:len(content)-1]
	}
	e.Time = l.Time
	e.Stream = stream
	e.Content = content
	e.Partial = partial
	return nil
}

// endsLine reports whether line, in format f, ends a container's line: an
// entry that is not partial, or one that does not parse (the reader skips
// it, and counts it as a line).
func (f Format) endsLine(line []byte) bool {
	var e Entry
	if err := f.Parse(line, &e); err != nil {
		return true
	}
	return !e.Partial
}

// parseTime parses an RFC 3339 timestamp as time.Parse(timeFormatIn)
// does, without allocating for the form runtimes write (UTC, "Z", up to
// nine fraction digits); anything else goes to time.Parse.
func parseTime(b []byte) (time.Time, error) {
	if t, ok := parseUTC(b); ok {
		return t, nil
	}
	return time.Parse(timeFormatIn, string(b))
}

// parseUTC parses "YYYY-MM-DDTHH:MM:SS[.F{1,9}]Z" with every field in
// range; ok is false for anything else, valid or not, which time.Parse
// then judges.
func parseUTC(b []byte) (time.Time, bool) {
	const base = len("2006-01-02T15:04:05")
	if len(b) < base+1 || b[len(b)-1] != 'Z' ||
		b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 ||
		month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := b[base : len(b)-1]; len(frac) > 0 {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		n, ok := digits(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			n *= 10
		}
		nsec = n
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day {
		return time.Time{}, false // February 30th and the like
	}
	return t, true
}

// digits parses b as a non-negative decimal number of only digits.
func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(b) > 0
}
