package fake

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// maxLogLineSize is the longest content of one CRI log entry; longer lines
// are split into partial (P) entries ending with a full (F) one, as
// containerd's default max_container_log_line_size.
const maxLogLineSize = 16 * 1024

// writeLog creates the log file at path (and its directory) if needed and
// appends the lines in the CRI log format:
//
//	2016-10-06T00:17:09.669794202Z stdout F hello
//
// A line holding newlines is several lines. path "" writes nothing.
func writeLog(path string, ts time.Time, stdout, stderr []string) (err error) {
	if path == "" {
		return nil
	}
	f, err := openLog(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return appendLog(f, ts, stdout, stderr)
}

// openLog opens the log file at path for appending, creating it (and its
// directory) if needed.
func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
}

// appendLog writes the lines to f in the CRI log format.
func appendLog(f *os.File, ts time.Time, stdout, stderr []string) error {
	if len(stdout)+len(stderr) == 0 {
		return nil
	}
	var b strings.Builder
	stamp := ts.UTC().Format(time.RFC3339Nano)
	appendLogLines(&b, stamp, "stdout", stdout)
	appendLogLines(&b, stamp, "stderr", stderr)
	_, err := f.WriteString(b.String())
	return err
}

func appendLogLines(b *strings.Builder, stamp, stream string, lines []string) {
	for _, text := range lines {
		for line := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
			for len(line) > maxLogLineSize {
				writeLogEntry(b, stamp, stream, "P", line[:maxLogLineSize])
				line = line[maxLogLineSize:]
			}
			writeLogEntry(b, stamp, stream, "F", line)
		}
	}
}

func writeLogEntry(b *strings.Builder, stamp, stream, tag, content string) {
	b.WriteString(stamp)
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.WriteString(content)
	b.WriteByte('\n')
}
