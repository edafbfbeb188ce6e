package server

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLogQuery(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	until := since.Add(time.Hour)
	intp := func(n int) *int { return &n }
	for _, tc := range []struct {
		name  string
		query string
		want  *logQuery
		err   string // the errors' aggregate, as answered 400
	}{
		{name: "nothing", query: "", want: nil},
		{name: "unknown parameters only", query: "foo=bar", want: nil},
		{name: "a service", query: "query=kubelet", want: &logQuery{services: []string{"kubelet"}}},
		{name: "services and a file", query: "query=kubelet&query=containerd&query=/foo.log",
			want: &logQuery{services: []string{"kubelet", "containerd"}, files: []string{"/foo.log"}}},
		{name: "a file with a backslash", query: `query=C:\foo.log`, want: &logQuery{files: []string{`C:\foo.log`}}},
		{name: "blank queries skipped", query: "query=kubelet&query=%20%20", want: &logQuery{services: []string{"kubelet"}}},
		{name: "an empty query", query: "query=", err: `query: Invalid value: [""]: may not be empty`},
		{name: "a blank query", query: "query=%20%20", err: `query: Invalid value: ["  "]: may not be empty`},
		{name: "every option", query: "query=kubelet&sinceTime=2026-01-02T03:04:05Z&untilTime=2026-01-02T04:04:05Z&tailLines=10&boot=-1&pattern=err.*",
			want: &logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{sinceTime: &since, untilTime: &until,
				tailLines: intp(10), boot: intp(-1), pattern: "err.*"}}},
		{name: "options without a query", query: "tailLines=5", want: &logQuery{logQueryOptions: logQueryOptions{tailLines: intp(5)}}},
		{name: "bad sinceTime", query: "query=kubelet&sinceTime=yesterday", err: `sinceTime: Invalid value: "yesterday": invalid time format`},
		{name: "bad untilTime", query: "query=kubelet&untilTime=2026-01-02", err: `untilTime: Invalid value: "2026-01-02": invalid time format`},
		{name: "bad boot", query: "query=kubelet&boot=last", err: `boot: Invalid value: "last": strconv.Atoi: parsing "last": invalid syntax`},
		{name: "bad tailLines", query: "query=kubelet&tailLines=1e3",
			err: `tailLines: Invalid value: "1e3": strconv.Atoi: parsing "1e3": invalid syntax`},
		{name: "several errors", query: "query=&tailLines=x&boot=y",
			err: `[query: Invalid value: [""]: may not be empty, boot: Invalid value: "y": strconv.Atoi: parsing "y": invalid syntax, ` +
				`tailLines: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := url.ParseQuery(tc.query)
			require.NoError(t, err)
			got, errs := parseLogQuery(v)
			if tc.err != "" {
				require.NotEmpty(t, errs)
				assert.Equal(t, tc.err, errs.ToAggregate().Error())
				assert.Nil(t, got)
				return
			}
			assert.Empty(t, errs)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestValidateLogQuery(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "foo.log"), []byte("foo\n"), 0o644))
	stat := (&nodeLogs{o: NodeLogs{Dir: dir}}).stat
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before := since.Add(-time.Second)
	intp := func(n int) *int { return &n }
	long := string(make([]byte, 257))
	for i := range []byte(long) {
		long = long[:i] + "a" + long[i+1:]
	}
	for _, tc := range []struct {
		name string
		q    logQuery
		err  string // "" valid
	}{
		{name: "a service", q: logQuery{services: []string{"kubelet"}}},
		{name: "four services", q: logQuery{services: []string{"a", "b.service", "c@1", "d:x"}}},
		{name: "five services", q: logQuery{services: []string{"a", "b", "c", "d", "e"}}, err: "query: Too many: 5: must have at most 4 items"},
		{name: "unsafe service", q: logQuery{services: []string{"kubelet;rm"}}, err: `query: Invalid value: "kubelet;rm": input contains unsupported characters`},
		{name: "long service", q: logQuery{services: []string{long}}, err: `query: Invalid value: "` + long + `": length must be less than 256`},
		{name: "options only", q: logQuery{logQueryOptions: logQueryOptions{tailLines: intp(1)}}, err: "query: Required value: cannot be empty with options"},
		{name: "a file and a service", q: logQuery{services: []string{"kubelet"}, files: []string{"/foo.log"}},
			err: `query: Invalid value: "[/foo.log], [kubelet]": cannot specify a file and service`},
		{name: "two files", q: logQuery{files: []string{"/foo.log", "/bar.log"}},
			err: `query: Invalid value: ["/foo.log","/bar.log"]: cannot specify more than one file`},
		{name: "a file with options", q: logQuery{files: []string{"/foo.log"}, logQueryOptions: logQueryOptions{pattern: "x"}},
			err: `query: Invalid value: ["/foo.log"]: cannot specify file with options`},
		{name: "a file", q: logQuery{files: []string{"./foo.log"}}},
		{name: "a missing file", q: logQuery{files: []string{"./bar.log"}},
			err: `query: Invalid value: ["./bar.log"]: statat ./bar.log: no such file or directory`},
		// As upstream 1.36.3, whose os.Root takes a leading "/" as leaving
		// the log directory.
		{name: "an absolute file", q: logQuery{files: []string{"/foo.log"}},
			err: `query: Invalid value: ["/foo.log"]: statat /foo.log: path escapes from parent`},
		{name: "a file out of the directory", q: logQuery{files: []string{"../../etc/passwd"}},
			err: `query: Invalid value: ["../../etc/passwd"]: statat ../../etc/passwd: path escapes from parent`},
		{name: "since after until", q: logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{sinceTime: &since, untilTime: &before}},
			err: "untilTime: Invalid value: \"2026-01-02T03:04:04Z\": must be after `sinceTime`"},
		{name: "boot 0", q: logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{boot: intp(0)}}},
		{name: "boot 1", q: logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{boot: intp(1)}},
			err: "boot: Invalid value: 1: must be less than 1"},
		{name: "tailLines 100000", q: logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{tailLines: intp(100000)}}},
		{name: "tailLines -1", q: logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{tailLines: intp(-1)}},
			err: "tailLines: Invalid value: -1: must be between 0 and 100000, inclusive"},
		{name: "tailLines 100001", q: logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{tailLines: intp(100001)}},
			err: "tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive"},
		{name: "bad pattern", q: logQuery{services: []string{"kubelet"}, logQueryOptions: logQueryOptions{pattern: "a("}},
			err: "pattern: Invalid value: \"a(\": error parsing regexp: missing closing ): `a(`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.q.validate(stat)
			if tc.err == "" {
				assert.Empty(t, errs)
				return
			}
			assert.Equal(t, tc.err, errs.ToAggregate().Error())
		})
	}
}

func TestJournalArgs(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	until := time.Date(2026, 11, 12, 13, 14, 15, 0, time.UTC)
	intp := func(n int) *int { return &n }
	for _, tc := range []struct {
		name     string
		q        logQuery
		services []string
		want     []string
	}{
		{name: "a service", q: logQuery{}, services: []string{"kubelet"},
			want: []string{"--utc", "--no-pager", "--output=short-precise", "--unit=kubelet"}},
		{name: "everything", q: logQuery{logQueryOptions: logQueryOptions{sinceTime: &since, untilTime: &until, tailLines: intp(10), boot: intp(-1), pattern: "err|warn"}},
			services: []string{"kubelet", "containerd"},
			want: []string{"--utc", "--no-pager", "--output=short-precise", "--since=2026-1-2 03:4:5", "--until=2026-11-12 13:14:15",
				"--pager-end", "--lines=10", "--unit=kubelet", "--unit=containerd", "--grep=err|warn", "--boot", "-1"}},
		{name: "tailLines 0 and boot 0", q: logQuery{logQueryOptions: logQueryOptions{tailLines: intp(0), boot: intp(0)}}, services: []string{"kubelet"},
			want: []string{"--utc", "--no-pager", "--output=short-precise", "--pager-end", "--lines=0", "--unit=kubelet", "--boot", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, journalArgs(&tc.q, tc.services))
		})
	}
}

// FuzzLogQuery holds the parser and validation of /logs/ queries to
// never panicking, and to never letting a service name through that is
// not safe to hand journalctl, nor a file that is not one.
func FuzzLogQuery(f *testing.F) {
	for _, s := range []string{"", "query=kubelet", "query=/foo.log", "query=&tailLines=x", "query=a&sinceTime=2026-01-02T03:04:05Z&untilTime=2026-01-01T00:00:00Z",
		"query=a&pattern=(", "query=a&boot=-3&tailLines=100001", "query=a;b&query=c%00", "query=..%2f..%2fetc%2fpasswd", "query=" + url.QueryEscape(`C:\x`)} {
		f.Add(s)
	}
	dir := f.TempDir()
	stat := (&nodeLogs{o: NodeLogs{Dir: dir}}).stat
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, errs := parseLogQuery(v)
		if len(errs) > 0 {
			if q != nil {
				t.Fatalf("a query with errors %v", errs)
			}
			return
		}
		if q == nil {
			return
		}
		if len(q.validate(stat)) > 0 {
			return
		}
		for _, s := range q.services {
			if safeServiceName(s) != nil {
				t.Fatalf("unsafe service %q passed", s)
			}
		}
		if len(q.services) > maxLogServices || (len(q.services) > 0) == (len(q.files) > 0) || len(q.files) > 1 {
			t.Fatalf("services %q and files %q passed", q.services, q.files)
		}
		args := journalArgs(q, q.services)
		if len(args) < 3 {
			t.Fatalf("args %q", args)
		}
	})
}
