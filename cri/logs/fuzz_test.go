package logs_test

import (
	"bytes"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// FuzzParseCRILog checks that the parser never panics, that what it takes
// has a stream and a content that ends the line, and that its timestamp
// parser agrees with time.Parse.
func FuzzParseCRILog(f *testing.F) {
	for _, s := range []string{
		"2016-10-06T00:17:09.669794202Z stdout F log content 1",
		"2016-10-06T00:17:09.669794202Z stderr P part",
		"2016-10-06T00:17:09Z stdout F ",
		"2016-10-06T02:17:09.5+02:00 stdout F:x y",
		"2024-02-29T23:59:59.999999999Z stdout F \r",
		"2023-02-29T00:00:00Z stdout F x",
		"bad stdout F x",
		`{"log":"x\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if i := bytes.IndexByte(line, ' '); i >= 0 {
			checkParseTime(t, string(line[:i]))
		}
		var e logs.Entry
		if err := logs.ParseCRILog(line, &e); err != nil {
			return
		}
		if e.Stream != runtimeapi.Stdout && e.Stream != runtimeapi.Stderr {
			t.Fatalf("stream %q from %q", e.Stream, line)
		}
		if !bytes.HasSuffix(line, e.Content) {
			t.Fatalf("content %q is not the end of %q", e.Content, line)
		}
		if e.Time.IsZero() && !bytes.HasPrefix(line, []byte("0001-01-01T00:00:00")) {
			t.Fatalf("zero time from %q", line)
		}
	})
}
