package logs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/logs"
)

var t0 = time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)

func TestParseCRILog(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       logs.Entry
		err        string
	}{
		{name: "full stdout", line: "2016-10-06T00:17:09.669794202Z stdout F log content 1",
			want: logs.Entry{Time: t0, Stream: runtimeapi.Stdout, Content: []byte("log content 1")}},
		{name: "partial stderr", line: "2016-10-06T00:17:09.669794202Z stderr P log content 2",
			want: logs.Entry{Time: t0, Stream: runtimeapi.Stderr, Content: []byte("log content 2"), Partial: true}},
		{name: "empty content", line: "2016-10-06T00:17:09.669794202Z stdout F ",
			want: logs.Entry{Time: t0, Stream: runtimeapi.Stdout, Content: []byte{}}},
		{name: "spaces kept", line: "2016-10-06T00:17:09.669794202Z stdout F  a  b ",
			want: logs.Entry{Time: t0, Stream: runtimeapi.Stdout, Content: []byte(" a  b ")}},
		{name: "carriage return is content", line: "2016-10-06T00:17:09.669794202Z stdout F dos\r",
			want: logs.Entry{Time: t0, Stream: runtimeapi.Stdout, Content: []byte("dos\r")}},
		{name: "further tags ignored", line: "2016-10-06T00:17:09.669794202Z stdout P:x:y more",
			want: logs.Entry{Time: t0, Stream: runtimeapi.Stdout, Content: []byte("more"), Partial: true}},
		{name: "unknown tag is full", line: "2016-10-06T00:17:09.669794202Z stdout X more",
			want: logs.Entry{Time: t0, Stream: runtimeapi.Stdout, Content: []byte("more")}},
		{name: "short time", line: "2016-10-06T00:17:09Z stdout F x",
			want: logs.Entry{Time: t0.Truncate(time.Second), Stream: runtimeapi.Stdout, Content: []byte("x")}},
		{name: "time with offset", line: "2016-10-06T02:17:09.669794202+02:00 stdout F x",
			want: logs.Entry{Time: t0.In(time.FixedZone("", 2*3600)), Stream: runtimeapi.Stdout, Content: []byte("x")}},
		{name: "no space", line: "2016-10-06T00:17:09.669794202Z", err: "timestamp is not found"},
		{name: "bad time", line: "yesterday stdout F x", err: `unexpected timestamp format "2006-01-02T15:04:05.999999999Z07:00"`},
		{name: "no stream end", line: "2016-10-06T00:17:09.669794202Z stdout", err: "stream type is not found"},
		{name: "bad stream", line: "2016-10-06T00:17:09.669794202Z stdin F x", err: `unexpected stream type "stdin"`},
		{name: "no tag end", line: "2016-10-06T00:17:09.669794202Z stdout F", err: "log tag is not found"},
		{name: "empty", line: "", err: "timestamp is not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e logs.Entry
			err := logs.ParseCRILog([]byte(tc.line), &e)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, tc.want.Time.Equal(e.Time), "time %s, want %s", e.Time, tc.want.Time)
			_, wantOff := tc.want.Time.Zone()
			_, off := e.Time.Zone()
			assert.Equal(t, wantOff, off, "zone offset")
			assert.Equal(t, tc.want.Stream, e.Stream)
			assert.Equal(t, string(tc.want.Content), string(e.Content))
			assert.Equal(t, tc.want.Partial, e.Partial)
		})
	}
}

func TestParseDockerJSONLog(t *testing.T) {
	ts := time.Date(2016, 10, 20, 18, 39, 20, 576064430, time.UTC)
	for _, tc := range []struct {
		name, line string
		want       logs.Entry
		err        string
	}{
		{name: "full", line: `{"log":"content 1\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}`,
			want: logs.Entry{Time: ts, Stream: runtimeapi.Stdout, Content: []byte("content 1")}},
		{name: "partial", line: `{"log":"content 2","stream":"stderr","time":"2016-10-20T18:39:20.57606443Z"}`,
			want: logs.Entry{Time: ts, Stream: runtimeapi.Stderr, Content: []byte("content 2"), Partial: true}},
		{name: "empty line", line: `{"log":"\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}`,
			want: logs.Entry{Time: ts, Stream: runtimeapi.Stdout, Content: []byte{}}},
		{name: "unknown stream", line: `{"log":"x\n","stream":"stdin","time":"2016-10-20T18:39:20.57606443Z"}`, err: `unexpected stream type "stdin"`},
		{name: "not json", line: `2016-10-20T18:39:20.57606443Z stdout F x`, err: "failed with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e logs.Entry
			err := logs.ParseDockerJSONLog([]byte(tc.line), &e)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.True(t, tc.want.Time.Equal(e.Time))
			assert.Equal(t, tc.want.Stream, e.Stream)
			assert.Equal(t, string(tc.want.Content), string(e.Content))
			assert.Equal(t, tc.want.Partial, e.Partial)
		})
	}
}

func TestDetectFormat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want logs.Format
		err  string
	}{
		{line: "2016-10-06T00:17:09.669794202Z stdout F x", want: logs.FormatCRI},
		{line: `{"log":"x\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}`, want: logs.FormatDockerJSON},
		{line: "hello world", err: `unsupported log format: "hello world"`},
	} {
		t.Run(tc.line, func(t *testing.T) {
			f, err := logs.DetectFormat([]byte(tc.line))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, f)
		})
	}
	assert.Equal(t, "cri", logs.FormatCRI.String())
	assert.Equal(t, "docker-json", logs.FormatDockerJSON.String())
	assert.Equal(t, "Format(9)", logs.Format(9).String())
	assert.Error(t, logs.Format(9).Parse([]byte("x"), &logs.Entry{}))
}

// The allocation-free timestamp parser agrees with time.Parse, including
// on what it refuses.
func TestParseTimeAgreesWithTimeParse(t *testing.T) {
	for _, s := range []string{
		"2016-10-06T00:17:09.669794202Z",
		"2016-10-06T00:17:09Z",
		"2016-10-06T00:17:09.5Z",
		"2016-10-06T00:17:09.000000000Z",
		"2024-02-29T23:59:59.999999999Z",
		"2023-02-29T00:00:00Z",
		"2016-10-06T24:00:00Z",
		"2016-10-06T00:60:00Z",
		"2016-10-06T00:00:60Z",
		"2016-13-06T00:00:00Z",
		"2016-00-06T00:00:00Z",
		"2016-10-00T00:00:00Z",
		"2016-10-06T00:17:09.1234567891Z",
		"2016-10-06T00:17:09,5Z",
		"2016-10-06T00:17:09.Z",
		"2016-10-06T00:17:09.5+02:00",
		"2016-10-06T00:17:09.5-00:00",
		"2016-10-06t00:17:09Z",
		"2016-10-06T0:17:09Z",
		"0000-01-01T00:00:00Z",
		"+016-10-06T00:17:09Z",
		"2016-10-06T00:17:09z",
		"",
	} {
		t.Run(s, func(t *testing.T) {
			checkParseTime(t, s)
		})
	}
}

func checkParseTime(t *testing.T, s string) {
	t.Helper()
	got, err := logs.ParseTime([]byte(s))
	want, wantErr := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s)
	if wantErr != nil {
		require.Error(t, err, "time.Parse refuses %q", s)
		return
	}
	require.NoError(t, err, "time.Parse takes %q", s)
	require.True(t, want.Equal(got), "%q: %s, want %s", s, got, want)
	_, wo := want.Zone()
	_, go_ := got.Zone()
	require.Equal(t, wo, go_, "%q: zone offset", s)
	require.Equal(t, want.Location() == time.UTC, got.Location() == time.UTC, "%q: UTC location", s)
}
