package server

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// HealthCheck is one named check of /healthz, upstream's healthz.NamedCheck:
// /healthz runs every check, /healthz/<Name> runs this one alone.
type HealthCheck struct {
	// Name is the check's name in /healthz's output and its path.
	Name string
	// Check returns nil when healthy, else the reason. It is called from
	// the request's goroutine.
	Check func(r *http.Request) error
	// Detail, when set, says more of a passing check in /healthz?verbose:
	// a non-empty answer follows its line ("[+]apisource ok: serving 3
	// pods from the local state ..."). /healthz and /healthz/<Name> still
	// answer "ok".
	Detail func() string
}

// pingCheck is upstream's "ping": healthy while the server answers.
var pingCheck = HealthCheck{Name: "ping", Check: func(*http.Request) error { return nil }}

// healthChecks returns the checks /healthz runs, in order: ping, the
// Health checker as "syncloop", then Options.Checks; a name given twice
// keeps its first check.
func healthChecks(o Options) []HealthCheck {
	checks := []HealthCheck{pingCheck}
	if o.Health != nil {
		h := o.Health
		checks = append(checks, HealthCheck{Name: "syncloop", Check: func(*http.Request) error { return h.Healthy() }})
	}
	for _, c := range o.Checks {
		if c.Check == nil || slices.ContainsFunc(checks, func(d HealthCheck) bool { return d.Name == c.Name }) {
			continue
		}
		checks = append(checks, c)
	}
	return checks
}

// healthRoutes serves /healthz and /healthz/<check> on mux.
func (s *Server) healthRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	mux.HandleFunc("GET /healthz/{name}", s.serveHealthCheck)
}

// serveHealthz answers /healthz as k8s.io/apiserver's healthz handler: "ok"
// when every check passes; with ?verbose a line per check ("[+]ping ok")
// and "healthz check passed"; on failure always the lines, the failed
// checks' reasons withheld ("[-]syncloop failed: reason withheld"), and
// 500. ?exclude=<name> skips a check.
func (s *Server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	excluded := map[string]bool{}
	for _, name := range query["exclude"] {
		excluded[name] = false
	}
	var out bytes.Buffer
	var failed []string
	for _, c := range s.checks {
		if _, ok := excluded[c.Name]; ok {
			excluded[c.Name] = true
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
			continue
		}
		if err := c.Check(r); err != nil {
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
			failed = append(failed, c.Name)
			s.log.Info("Health check failed", "check", c.Name, "err", err)
			continue
		}
		if d := detail(c); d != "" {
			fmt.Fprintf(&out, "[+]%s ok: %s\n", c.Name, d)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
	}
	var unknown []string
	for name, seen := range excluded {
		if !seen {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(unknown, ","))
	}
	if len(failed) > 0 {
		http.Error(w, out.String()+"healthz check failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, ok := query["verbose"]; !ok {
		fmt.Fprint(w, "ok")
		return
	}
	out.WriteString("healthz check passed\n")
	_, _ = out.WriteTo(w)
}

// serveHealthCheck answers /healthz/<name> with one check: "ok", or 500
// with the check's reason.
func (s *Server) serveHealthCheck(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	i := slices.IndexFunc(s.checks, func(c HealthCheck) bool { return c.Name == name })
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	if err := s.checks[i].Check(r); err != nil {
		http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, "ok")
}

// detail is c's Detail, on one line.
func detail(c HealthCheck) string {
	if c.Detail == nil {
		return ""
	}
	return strings.Join(strings.Fields(c.Detail()), " ")
}
