package podsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeletkit/kubeletkit/cri"
)

// ErrPostStartHook is wrapped by the error of a start whose postStart hook
// failed; its text is the container's waiting reason, upstream's.
var ErrPostStartHook = errors.New(ReasonPostStartHookError)

// errSleepHookCanceled is a sleep hook's error when its context ended first.
var errSleepHookCanceled = errors.New("container terminated before sleep hook finished")

// maxHookBody is how much of an HTTP hook's response body is read (and
// discarded) so that the connection ends cleanly.
const maxHookBody = 10 << 10

// hookTarget is what a lifecycle handler runs against: the container (its
// spec may be nil for a container known only from the runtime), its CRI ID,
// and the pod's IPs from the runtime (for an HTTP handler without a host).
type hookTarget struct {
	pod         *v1.Pod
	container   *v1.Container
	name        string
	containerID string
	podIPs      []string
}

// execExitError is an exec handler's command that ran and exited non-zero.
// Its text is upstream's (the CRI client's), stderr included, so it belongs
// in the container's waiting message but not in logs.
type execExitError struct {
	cmd    []string
	code   int32
	stderr []byte
}

func (e *execExitError) Error() string {
	return fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(e.cmd, " "), e.code, e.stderr)
}

// logValue is what a log line says of a hook's error: never a command's
// output, which may carry anything the container printed.
func logValue(err error) string {
	var ee *execExitError
	if errors.As(err, &ee) {
		return "exit code " + strconv.Itoa(int(ee.code))
	}
	return err.Error()
}

// runHook runs a lifecycle handler: exec in the container, HTTP GET, or
// sleep. timeout bounds it (0: only ctx does, as for upstream's postStart).
// An HTTP handler succeeds on any response, whatever its status, as
// upstream's does; only a request that gets no answer fails. The output is
// an exec command's stdout and then stderr.
func (s *Syncer) runHook(ctx context.Context, t hookTarget, h *v1.LifecycleHandler, timeout time.Duration) ([]byte, error) {
	switch {
	case h.Exec != nil:
		resp, err := s.rt.ExecSync(ctx, t.containerID, h.Exec.Command, timeout)
		if err != nil {
			return nil, grpcStyle(err)
		}
		out := append(append([]byte(nil), resp.GetStdout()...), resp.GetStderr()...)
		if resp.GetExitCode() != 0 {
			return out, &execExitError{cmd: h.Exec.Command, code: resp.GetExitCode(), stderr: resp.GetStderr()}
		}
		return out, nil
	case h.HTTPGet != nil:
		return nil, s.httpHook(ctx, t, h.HTTPGet, timeout)
	case h.Sleep != nil:
		d := time.Duration(h.Sleep.Seconds) * time.Second
		if timeout > 0 && d > timeout {
			d = timeout
		}
		tm := s.clock.NewTimer(d)
		defer tm.Stop()
		select {
		case <-tm.C():
			return nil, nil
		case <-ctx.Done():
			return nil, errSleepHookCanceled
		}
	}
	return nil, fmt.Errorf("invalid handler: %v", h)
}

// grpcStyle gives a failed CRI call's error the text upstream's CRI client
// gives it ("rpc error: code = ... desc = ..."), which upstream puts in hook
// messages; it still wraps err.
func grpcStyle(err error) error {
	var ce *cri.Error
	if !errors.As(err, &ce) {
		return err
	}
	return &textError{text: status.New(ce.Code, ce.Message).Err().Error(), err: err}
}

// textError is err with another text.
type textError struct {
	text string
	err  error
}

func (e *textError) Error() string { return e.text }
func (e *textError) Unwrap() error { return e.err }

// hookMessage is upstream's message for a failed handler, the waiting
// message of a container whose postStart hook failed.
func hookMessage(t hookTarget, h *v1.LifecycleHandler, output []byte, err error) string {
	pod := podDesc(t.pod)
	switch {
	case h.Exec != nil:
		return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, t.name, pod, err, string(output))
	case h.HTTPGet != nil:
		return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, t.name, pod, err)
	case h.Sleep != nil:
		return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, t.name, pod, err)
	}
	return fmt.Sprintf("Cannot run handler: %v", err)
}

// httpHook sends an HTTP handler's GET. The host is the handler's, else the
// pod's first IP (for a host-network pod without one, the node's).
func (s *Syncer) httpHook(ctx context.Context, t hookTarget, g *v1.HTTPGetAction, timeout time.Duration) error {
	host := g.Host
	if host == "" && len(t.podIPs) != 0 {
		host = t.podIPs[0]
	}
	if host == "" && t.pod != nil {
		host = t.pod.Status.PodIP
		if t.pod.Spec.HostNetwork && host == "" && len(s.opts.Config.HostIPs) != 0 {
			host = s.opts.Config.HostIPs[0]
		}
	}
	if host == "" {
		return errors.New("no host: the pod has no IP")
	}
	port, err := hookPort(t.container, g.Port)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	for _, hd := range g.HTTPHeaders {
		req.Header.Add(hd.Name, hd.Value)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "kube-lifecycle/kubeletkit")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "*/*")
	}
	resp, err := s.hooks.Do(req)
	if err != nil && gotHTTPResponse(err) && t.pod != nil {
		// An HTTPS hook that an HTTP server answered: upstream tries
		// again over HTTP, without credentials, and says so.
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		if r, rerr := s.hooks.Do(retry); rerr == nil {
			s.event(t.pod, v1.EventTypeWarning, EventLifecycleHTTPFallback,
				"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", retry.URL.Host)
			resp, err = r, nil
		}
	}
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHookBody))
	resp.Body.Close()
	return nil
}

// newHookClient returns the client of HTTP hooks, sending them as
// upstream's kubelet does: over rt, or a transport that does not verify
// TLS (there is nothing to verify a pod's certificate against), uses no
// proxy and opens one connection per request; following redirects only on
// the same host (another host's redirect is taken as the answer); never
// with credentials of the agent's own.
func newHookClient(rt http.RoundTripper) *http.Client {
	if rt == nil {
		rt = &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // upstream's: a pod's certificate cannot be verified
			DisableKeepAlives: true,
		}
	}
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

// gotHTTPResponse says an HTTPS request was answered in plain HTTP.
func gotHTTPResponse(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "server gave HTTP response to HTTPS client")
}

// hookPort resolves a handler's port, named (in the container's ports) or
// numbered, as upstream does.
func hookPort(c *v1.Container, p intstr.IntOrString) (int, error) {
	port := p.IntValue()
	if p.Type == intstr.String {
		found := false
		if c != nil {
			for _, cp := range c.Ports {
				if cp.Name == p.StrVal {
					port, found = int(cp.ContainerPort), true
					break
				}
			}
		}
		if !found {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return 0, fmt.Errorf("port %s not found", p.StrVal)
			}
			port = n
		}
	}
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("invalid port number: %v", port)
	}
	return port, nil
}
