package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NodeLogs serve the node's own logs under /logs/ (upstream's
// enableSystemLogHandler, on by default there) and, with Query, the
// journal and log files a query names (enableSystemLogQuery with the
// NodeLogQuery gate, off by default there).
type NodeLogs struct {
	// Dir is the node's log directory (upstream's /var/log/), served as
	// a file server: directory listings and files. Paths are opened
	// through an os.Root of it, so that neither "..", nor an absolute
	// path, nor a symbolic link leads out of it. Empty: /logs/ answers
	// 405 "logs endpoint is disabled.", as upstream's with the handler
	// off.
	Dir string
	// Query turns on /logs/?query=: a service's journal (journalctl -u),
	// or a file under Dir, with sinceTime, untilTime, tailLines, pattern
	// and boot.
	Query bool
	// Journal runs journalctl for a query. Nil: Journalctl{}, the one on
	// PATH.
	Journal Journal
}

// ErrJournalFailed, wrapped in an error a Journal returns, says that
// journalctl ran and exited with a failure: its output says why, and
// nothing is added to it.
var ErrJournalFailed = errors.New("journalctl failed")

// Journal runs the node's journal reader for /logs/?query=.
type Journal interface {
	// Run runs journalctl with args, its standard output and error both
	// written to w, until it exits or ctx ends. An error that wraps
	// ErrJournalFailed means it ran and failed; any other, that it could
	// not run.
	Run(ctx context.Context, args []string, w io.Writer) error
}

// JournalFunc adapts a function to Journal.
type JournalFunc func(ctx context.Context, args []string, w io.Writer) error

var _ Journal = JournalFunc(nil)

// Run calls f.
func (f JournalFunc) Run(ctx context.Context, args []string, w io.Writer) error {
	return f(ctx, args, w)
}

// Journalctl runs journalctl as a process of its own, without a shell,
// with the server's environment.
type Journalctl struct {
	// Path is the program; empty means "journalctl", looked up in PATH.
	Path string
}

var _ Journal = Journalctl{}

// Run runs journalctl with args.
func (j Journalctl) Run(ctx context.Context, args []string, w io.Writer) error {
	path := j.Path
	if path == "" {
		path = "journalctl"
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout = w
	cmd.Stderr = w
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return fmt.Errorf("%w: %w", ErrJournalFailed, err)
	}
	return err
}

// Upstream's limits of a log query.
const (
	maxLogTailLines     = 100000
	maxLogServiceLength = 256
	maxLogServices      = 4
	// logQueryTimeout bounds the journal's and the files' reading.
	logQueryTimeout = 30 * time.Second
	// journalDateLayout is how journalctl is given times (UTC).
	journalDateLayout = "2006-1-2 15:4:5"
)

// logQuery is a /logs/ query: the services (journal units) or files it
// names, and its options.
type logQuery struct {
	services []string
	files    []string
	logQueryOptions
}

// logQueryOptions are what a query asks of a service's log; a file
// takes none.
type logQueryOptions struct {
	sinceTime, untilTime *time.Time
	tailLines, boot      *int
	pattern              string
}

// parseLogQuery reads a /logs/ query as upstream: each "query" naming a
// file (it has a "/" or "\") or a service (not blank), sinceTime and
// untilTime in RFC 3339, boot and tailLines integers, pattern as it is.
// It returns nil and no errors when the query asks for none of them (the
// file server answers), and the errors of every value that does not
// parse (400).
func parseLogQuery(query url.Values) (*logQuery, field.ErrorList) {
	var errs field.ErrorList
	var q logQuery
	queries, asked := query["query"]
	for _, v := range queries {
		switch {
		case strings.ContainsAny(v, `/\`):
			q.files = append(q.files, v)
		case strings.TrimSpace(v) != "":
			q.services = append(q.services, v)
		}
	}
	if asked && len(q.files) == 0 && len(q.services) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("query"), queries, "may not be empty"))
	}
	parseTime := func(name string, into **time.Time) {
		v := query.Get(name)
		if v == "" {
			return
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), v, "invalid time format"))
			return
		}
		*into = &t
	}
	parseInt := func(name string, into **int) {
		v := query.Get(name)
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), v, err.Error()))
			return
		}
		*into = &n
	}
	parseTime("sinceTime", &q.sinceTime)
	parseTime("untilTime", &q.untilTime)
	parseInt("boot", &q.boot)
	parseInt("tailLines", &q.tailLines)
	q.pattern = query.Get("pattern")
	if len(errs) > 0 {
		return nil, errs
	}
	if len(q.services) == 0 && len(q.files) == 0 && q.logQueryOptions == (logQueryOptions{}) {
		return nil, nil
	}
	return &q, nil
}

// validate checks a query as upstream before running it (406): at most
// four services of safe names or one file that exists (stat, under the log
// directory) and takes no options, not both; since before until; boot not
// positive; tailLines within 0 to 100000; a pattern that is a regular
// expression.
func (q *logQuery) validate(stat func(name string) error) field.ErrorList {
	var errs field.ErrorList
	for _, s := range q.services {
		if err := safeServiceName(s); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("query"), s, err.Error()))
		}
	}
	if len(q.services) > maxLogServices {
		errs = append(errs, field.TooMany(field.NewPath("query"), len(q.services), maxLogServices))
	}
	switch {
	case len(q.files) == 0 && len(q.services) == 0:
		errs = append(errs, field.Required(field.NewPath("query"), "cannot be empty with options"))
	case len(q.files) > 0 && len(q.services) > 0:
		errs = append(errs, field.Invalid(field.NewPath("query"), fmt.Sprintf("%v, %v", q.files, q.services), "cannot specify a file and service"))
	case len(q.files) > 1:
		errs = append(errs, field.Invalid(field.NewPath("query"), q.files, "cannot specify more than one file"))
	case len(q.files) == 1 && q.logQueryOptions != (logQueryOptions{}):
		errs = append(errs, field.Invalid(field.NewPath("query"), q.files, "cannot specify file with options"))
	case len(q.files) == 1:
		if err := stat(q.files[0]); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("query"), q.files, err.Error()))
		}
	}
	if q.sinceTime != nil && q.untilTime != nil && q.sinceTime.After(*q.untilTime) {
		errs = append(errs, field.Invalid(field.NewPath("untilTime"), q.untilTime, "must be after `sinceTime`"))
	}
	if q.boot != nil && *q.boot > 0 {
		errs = append(errs, field.Invalid(field.NewPath("boot"), *q.boot, "must be less than 1"))
	}
	if q.tailLines != nil {
		if msgs := utilvalidation.IsInRange(*q.tailLines, 0, maxLogTailLines); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("tailLines"), *q.tailLines, msgs[0]))
		}
	}
	if _, err := syntax.Parse(q.pattern, syntax.Perl); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("pattern"), q.pattern, err.Error()))
	}
	return errs
}

// safeServiceName refuses a service name journalctl must not be given:
// longer than 256 bytes, or with a character other than letters, digits
// and "-_.:@".
func safeServiceName(s string) error {
	if len(s) > maxLogServiceLength {
		return fmt.Errorf("length must be less than %d", maxLogServiceLength)
	}
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.ContainsRune("-_.:@", c):
		default:
			return errors.New("input contains unsupported characters")
		}
	}
	return nil
}

// journalArgs are journalctl's arguments for the services of q, as
// upstream builds them: UTC, no pager, precise timestamps, then --since,
// --until, --pager-end --lines, a --unit per service, --grep and --boot.
func journalArgs(q *logQuery, services []string) []string {
	args := []string{"--utc", "--no-pager", "--output=short-precise"}
	if q.sinceTime != nil {
		args = append(args, "--since="+q.sinceTime.Format(journalDateLayout))
	}
	if q.untilTime != nil {
		args = append(args, "--until="+q.untilTime.Format(journalDateLayout))
	}
	if q.tailLines != nil {
		args = append(args, "--pager-end", "--lines="+strconv.Itoa(*q.tailLines))
	}
	for _, s := range services {
		if s != "" {
			args = append(args, "--unit="+s)
		}
	}
	if q.pattern != "" {
		args = append(args, "--grep="+q.pattern)
	}
	if q.boot != nil {
		args = append(args, "--boot", strconv.Itoa(*q.boot))
	}
	return args
}

// journalUnitsArgs asks journalctl for the units it has logs of.
var journalUnitsArgs = []string{"--field", "_SYSTEMD_UNIT"}

// nodeLogs serves /logs/.
type nodeLogs struct {
	o NodeLogs
}

// serveNodeLogs answers /logs/ as upstream's log server: with Query, a
// query that does not parse is 400, one with a path beside it or that
// does not validate 406, one naming services the journal (or their files,
// for services that do not log to it), one naming a file that file; every
// other request the file server.
func (s *Server) serveNodeLogs(w http.ResponseWriter, r *http.Request) {
	l := s.nodeLogs
	if l.o.Dir == "" {
		http.Error(w, "logs endpoint is disabled.", http.StatusMethodNotAllowed)
		return
	}
	rel := strings.TrimPrefix(r.URL.Path, logsPath[:len(logsPath)-1])
	if l.o.Query {
		q, errs := parseLogQuery(r.URL.Query())
		if len(errs) > 0 {
			http.Error(w, errs.ToAggregate().Error(), http.StatusBadRequest)
			return
		}
		if q != nil {
			if rel != "/" && rel != "" {
				http.Error(w, "path not allowed in query mode", http.StatusNotAcceptable)
				return
			}
			if errs := q.validate(l.stat); len(errs) > 0 {
				http.Error(w, errs.ToAggregate().Error(), http.StatusNotAcceptable)
				return
			}
			if len(q.services) > 0 {
				l.serveQuery(w, r, q)
				return
			}
			rel = "/" + strings.TrimPrefix(filepath.ToSlash(q.files[0]), "/")
		}
	}
	l.serveFile(w, r, rel)
}

// stat checks that name is a file or directory under the log directory.
func (l *nodeLogs) stat(name string) error {
	root, err := os.OpenRoot(l.o.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	_, err = root.Stat(name)
	return err
}

// serveFile serves path (cleaned, "/"-rooted) from the log directory with
// net/http's file server, through an os.Root.
func (l *nodeLogs) serveFile(w http.ResponseWriter, r *http.Request, path string) {
	root, err := os.OpenRoot(l.o.Dir)
	if err != nil {
		http.Error(w, "log directory not available", http.StatusInternalServerError)
		return
	}
	defer root.Close()
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = new(url.URL)
	*r2.URL = *r.URL
	r2.URL.Path, r2.URL.RawPath = path, ""
	http.FileServer(http.FS(rootFS{root.FS()})).ServeHTTP(w, r2)
}

// rootFS is an os.Root's file system for the file server: a path the root
// refuses because it leads out of the directory (a symbolic link to
// elsewhere) is not there (404), as much as one that does not exist.
type rootFS struct{ fs.FS }

func (f rootFS) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, err
}

// serveQuery answers a query for services, as upstream's journal server:
// text, gzipped when the client asks for exactly "gzip"; for each service
// the journal knows, its journal entries; for the others, their log file
// under the log directory (SERVICE, SERVICE.log or SERVICE/SERVICE.log),
// unless the query has options. Failures are written into the answer,
// which has begun.
func (l *nodeLogs) serveQuery(w http.ResponseWriter, r *http.Request, q *logQuery) {
	var out io.Writer = w
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	if r.Header.Get("Accept-Encoding") == "gzip" {
		w.Header().Set("Content-Encoding", "gzip")
		gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // BestSpeed is a valid level
		defer gz.Close()
		out = gz
	}
	ctx, cancel := context.WithTimeout(r.Context(), logQueryTimeout)
	defer cancel()
	journal := l.o.Journal
	if journal == nil {
		journal = Journalctl{}
	}
	var inJournal, inFiles []string
	var units bytes.Buffer
	known := journal.Run(ctx, journalUnitsArgs, &units) == nil
	for _, s := range q.services {
		if known && strings.Contains(units.String(), s+".service") {
			inJournal = append(inJournal, s)
		} else {
			inFiles = append(inFiles, s)
		}
	}
	if len(inJournal) > 0 {
		err := journal.Run(ctx, journalArgs(q, inJournal), out)
		if err != nil && !errors.Is(err, ErrJournalFailed) && (q.boot == nil || *q.boot == 0) {
			fmt.Fprintf(out, "\nerror: journal output not available\n")
		}
	}
	if len(inFiles) == 0 {
		return
	}
	if q.logQueryOptions != (logQueryOptions{}) {
		fmt.Fprintf(out, "\noptions present and query resolved to log files for %v\ntry without specifying options\n", inFiles)
		return
	}
	if ctx.Err() != nil {
		fmt.Fprintf(out, "\ncontext error: %v\n", ctx.Err())
		return
	}
	for _, s := range inFiles {
		l.copyServiceFile(ctx, out, s)
	}
}

// copyServiceFile writes the first of SERVICE, SERVICE.log and
// SERVICE/SERVICE.log that is a file under the log directory, or says
// that there is none.
func (l *nodeLogs) copyServiceFile(ctx context.Context, w io.Writer, service string) {
	root, err := os.OpenRoot(l.o.Dir)
	if err == nil {
		defer root.Close()
		for _, name := range []string{service, service + ".log", service + "/" + service + ".log"} {
			if err = copyRootFile(ctx, w, root, name); !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(w, "\nlog not found for %s\n", service)
	default:
		fmt.Fprintf(w, "\nerror getting log for %s: %v\n", service, err)
	}
}

// copyRootFile copies the file name of root to w; a directory is not
// there.
func copyRootFile(ctx context.Context, w io.Writer, root *os.Root, name string) error {
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.IsDir() {
		return fs.ErrNotExist
	}
	_, err = io.Copy(w, ctxReader{ctx, f})
	return err
}

// ctxReader stops reading once its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
