package server

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// decodeLogOptions decodes /containerLogs' query into PodLogOptions as the
// API's query conversion does: the first value of each parameter; a bool is
// false only when absent, "0" or "false"; sinceTime is RFC 3339. The
// legacy tail parameter sets tailLines, and tail=all means the whole log.
func decodeLogOptions(q url.Values) (*v1.PodLogOptions, error) {
	if tail := q.Get("tail"); tail != "" {
		q = maps.Clone(q)
		if tail == "all" {
			delete(q, "tailLines")
		} else {
			q["tailLines"] = []string{tail}
		}
	}
	o := &v1.PodLogOptions{}
	boolean := func(name string) bool {
		v, ok := q[name]
		return ok && len(v) > 0 && v[0] != "0" && !strings.EqualFold(v[0], "false")
	}
	integer := func(name string) (*int64, error) {
		v, ok := q[name]
		if !ok || len(v) == 0 {
			return nil, nil
		}
		i, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &i, nil
	}
	var err error
	o.Container = q.Get("container")
	o.Follow = boolean("follow")
	o.Previous = boolean("previous")
	o.Timestamps = boolean("timestamps")
	o.InsecureSkipTLSVerifyBackend = boolean("insecureSkipTLSVerifyBackend")
	if o.SinceSeconds, err = integer("sinceSeconds"); err != nil {
		return nil, err
	}
	if o.TailLines, err = integer("tailLines"); err != nil {
		return nil, err
	}
	if o.LimitBytes, err = integer("limitBytes"); err != nil {
		return nil, err
	}
	if v, ok := q["sinceTime"]; ok && len(v) > 0 {
		t := &metav1.Time{}
		if err := t.UnmarshalQueryParameter(v[0]); err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		o.SinceTime = t
	}
	if v, ok := q["stream"]; ok && len(v) > 0 {
		stream := v[0]
		o.Stream = &stream
	}
	return o, nil
}

// validLogStreams are the streams PodLogOptions may name.
var validLogStreams = []string{v1.LogStreamStdout, v1.LogStreamStderr, v1.LogStreamAll}

// validateLogOptions checks PodLogOptions as the API validates them:
// tailLines not negative, limitBytes and sinceSeconds positive, not both
// sinceSeconds and sinceTime, a known stream, and no tailLines with a
// single stream.
func validateLogOptions(o *v1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.TailLines, apivalidation.IsNegativeErrorMsg))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.LimitBytes, "must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.SinceSeconds, "must be greater than 0"))
	}
	if o.Stream != nil {
		known := false
		for _, s := range validLogStreams {
			known = known || s == *o.Stream
		}
		if !known {
			errs = append(errs, field.NotSupported(field.NewPath("stream"), *o.Stream, validLogStreams))
		}
		if *o.Stream != v1.LogStreamAll && o.TailLines != nil {
			errs = append(errs, field.Forbidden(field.NewPath(""), "`tailLines` and specific `stream` are mutually exclusive for now"))
		}
	}
	return errs
}

// serveContainerLogs answers /containerLogs/{podNamespace}/{podID}/{containerName}
// as upstream: the query decoded (400) and validated (422), the pod (404
// "pod ... does not exist") and its container (404 "container ... not found
// in pod ...") looked up, then the log written to the response, flushed as
// it is written so that a follower sees each line at once.
func (s *Server) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	if s.opts.Logs == nil {
		http.Error(w, "no container logger", http.StatusServiceUnavailable)
		return
	}
	p, ok := parsePath(w, r, "/containerLogs/", logsShape)
	if !ok {
		return
	}
	opts, err := decodeLogOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf(`{"message": "Unable to decode query: %v."}`, err))
		return
	}
	if errs := validateLogOptions(opts); len(errs) > 0 {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf(`{"message": "Invalid request: %v."}`, errs.ToAggregate()))
		return
	}
	// The split of stdout and stderr is upstream's alpha
	// PodLogsQuerySplitStreams, off by default: only All is served.
	if opts.Stream != nil && *opts.Stream != v1.LogStreamAll {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unable to return the given log stream: %q. Please enable PodLogsQuerySplitStreams feature gate in kubelet", *opts.Stream))
		return
	}
	pod := s.lookupPod(w, p, logsShape)
	if pod == nil {
		return
	}
	if !hasContainer(pod, p.container) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("container %q not found in pod %q", p.container, p.pod))
		return
	}
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	if err := s.opts.Logs.ContainerLogs(r.Context(), pod, p.container, opts, fw, fw); err != nil {
		if fw.wrote() {
			s.log.Warn("Failed to write a container's log", "pod", p.namespace+"/"+p.pod, "container", p.container, "err", err)
			return
		}
		writeError(w, errorStatus(err), err.Error())
	}
}

// hasContainer reports whether the pod's spec has the named container,
// init or ephemeral ones included.
func hasContainer(pod *v1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// flushWriter writes to the response and flushes after each write; both
// of a log's streams write to one, from any goroutine.
type flushWriter struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	rc  *http.ResponseController
	n   int64
	err error
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	if len(p) == 0 {
		// Writing nothing would still send the status, 200.
		return 0, nil
	}
	n, err := f.w.Write(p)
	f.n += int64(n)
	if err == nil {
		// A writer that cannot flush still gets every byte, at the end.
		if ferr := f.rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
			err = ferr
		}
	}
	f.err = err
	return n, err
}

func (f *flushWriter) wrote() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n > 0
}
