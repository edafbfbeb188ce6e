package prober

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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Execer runs a command in a container; cri.Execer's ExecSync, which
// *cri.Client and *fake.Runtime implement.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)
}

var _ Execer = (cri.Execer)(nil)

// Target is what one probe run needs to know.
type Target struct {
	// Pod is the probed pod.
	Pod *v1.Pod
	// PodIP is the pod's IP, the default host of HTTP, TCP and gRPC probes.
	PodIP string
	// Container is the probed container's spec (for named ports).
	Container *v1.Container
	// ContainerID is the bare CRI container ID (for exec).
	ContainerID string
	// Type is the probe type.
	Type ProbeType
	// Probe is the probe to run.
	Probe *v1.Probe
}

// Outcome is one probe run's result. Output is short text for events and
// logs; Warning is set when the probe passed with a warning (an HTTP
// redirect to another host).
type Outcome struct {
	Result  Result
	Output  string
	Warning string
}

// ProbeRunner runs one probe once. It returns Success or Failure with an
// output, or an error when the probe could not be run at all. It must return
// by the probe's timeout.
type ProbeRunner interface {
	Probe(ctx context.Context, t Target) (Outcome, error)
}

// ProbeRunnerFunc adapts a function to ProbeRunner.
type ProbeRunnerFunc func(ctx context.Context, t Target) (Outcome, error)

// Probe calls f.
func (f ProbeRunnerFunc) Probe(ctx context.Context, t Target) (Outcome, error) { return f(ctx, t) }

var (
	_ ProbeRunner = ProbeRunnerFunc(nil)
	_ ProbeRunner = (*Runner)(nil)
)

// MaxOutput is how many bytes of an HTTP body or exec output are read or
// kept (10 KiB, as upstream).
const MaxOutput = 10 << 10

// ErrNoExecer: an exec probe was asked of a Runner without an Execer.
var ErrNoExecer = errors.New("no execer for exec probes")

// ErrNoHandler: the probe names no exec, httpGet, tcpSocket or grpc action.
var ErrNoHandler = errors.New("probe has no handler")

// RunnerOptions configure a Runner. The zero value runs HTTP, TCP and gRPC
// probes; exec probes need Execer.
type RunnerOptions struct {
	// Execer runs exec probes. nil: exec probes fail with ErrNoExecer.
	Execer Execer
	// UserAgent is the default User-Agent of HTTP probes.
	// "" means "kube-probe/kubeletkit".
	UserAgent string
}

// Runner is the real ProbeRunner. It is safe for concurrent use.
type Runner struct {
	execer    Execer
	userAgent string
	transport *http.Transport
}

// NewRunner returns a Runner.
func NewRunner(opts RunnerOptions) *Runner {
	ua := opts.UserAgent
	if ua == "" {
		ua = "kube-probe/kubeletkit"
	}
	return &Runner{
		execer:    opts.Execer,
		userAgent: ua,
		transport: &http.Transport{
			// Probes check the endpoint, not its certificate, as upstream.
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
			DisableKeepAlives: true,
			Proxy:             nil,
		},
	}
}

// Close releases idle connections.
func (r *Runner) Close() { r.transport.CloseIdleConnections() }

// timeoutOf is the probe's timeout (default 1s).
func timeoutOf(p *v1.Probe) time.Duration {
	if p.TimeoutSeconds > 0 {
		return time.Duration(p.TimeoutSeconds) * time.Second
	}
	return time.Second
}

// Probe implements ProbeRunner; ctx is bounded by the probe's timeout.
func (r *Runner) Probe(ctx context.Context, t Target) (Outcome, error) {
	p := t.Probe
	if p == nil {
		return Outcome{}, ErrNoHandler
	}
	timeout := timeoutOf(p)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.Exec != nil:
		return r.exec(ctx, t, timeout)
	case p.HTTPGet != nil:
		return r.httpGet(ctx, t)
	case p.TCPSocket != nil:
		return r.tcp(ctx, t)
	case p.GRPC != nil:
		return r.grpc(ctx, t, timeout)
	}
	return Outcome{}, fmt.Errorf("probe container %q: %w", containerName(t), ErrNoHandler)
}

func containerName(t Target) string {
	if t.Container == nil {
		return ""
	}
	return t.Container.Name
}

func truncate(b []byte) string {
	if len(b) > MaxOutput {
		b = b[:MaxOutput]
	}
	return string(b)
}

func (r *Runner) exec(ctx context.Context, t Target, timeout time.Duration) (Outcome, error) {
	if r.execer == nil {
		return Outcome{}, fmt.Errorf("exec probe in container %q: %w", t.ContainerID, ErrNoExecer)
	}
	cmd := t.Probe.Exec.Command
	resp, err := r.execer.ExecSync(ctx, t.ContainerID, cmd, timeout)
	if err != nil {
		if errors.Is(err, cri.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
			return Outcome{Result: Failure, Output: fmt.Sprintf("command %q timed out", strings.Join(cmd, " "))}, nil
		}
		return Outcome{}, fmt.Errorf("exec probe in container %q: %w", t.ContainerID, err)
	}
	out := truncate(append(append([]byte{}, resp.Stdout...), resp.Stderr...))
	if resp.ExitCode != 0 {
		if out == "" {
			out = fmt.Sprintf("command %q exited with %d", strings.Join(cmd, " "), resp.ExitCode)
		}
		return Outcome{Result: Failure, Output: out}, nil
	}
	return Outcome{Result: Success, Output: out}, nil
}

// resolvePort turns a probe port (number or container port name) into a
// number; a bad one is a Failure output.
func resolvePort(port intOrString, c *v1.Container) (int, string) {
	if port.isName {
		if c != nil {
			for _, p := range c.Ports {
				if p.Name == port.name {
					return int(p.ContainerPort), ""
				}
			}
		}
		return 0, fmt.Sprintf("port name %q not found in container %q", port.name, nameOf(c))
	}
	if port.num < 1 || port.num > 65535 {
		return 0, fmt.Sprintf("invalid port number %d", port.num)
	}
	return port.num, ""
}

func nameOf(c *v1.Container) string {
	if c == nil {
		return ""
	}
	return c.Name
}

type intOrString struct {
	isName bool
	name   string
	num    int
}

func (r *Runner) httpGet(ctx context.Context, t Target) (Outcome, error) {
	h := t.Probe.HTTPGet
	port, bad := resolvePort(intOrString{isName: h.Port.Type == intstr.String, name: h.Port.StrVal, num: int(h.Port.IntVal)}, t.Container)
	if bad != "" {
		return Outcome{Result: Failure, Output: bad}, nil
	}
	host := h.Host
	if host == "" {
		host = t.PodIP
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + path)
	if err != nil {
		return Outcome{Result: Failure, Output: fmt.Sprintf("invalid probe URL: %v", err)}, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Outcome{Result: Failure, Output: fmt.Sprintf("invalid probe request: %v", err)}, nil
	}
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "Host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", r.userAgent)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "*/*")
	}
	origHost := req.URL.Hostname()
	offHost := false
	client := &http.Client{
		Transport: r.transport,
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if next.URL.Hostname() != origHost {
				offHost = true
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error()}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutput))
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error()}, nil
	}
	out := string(body)
	code := resp.StatusCode
	if code >= 200 && code < 400 {
		if offHost {
			return Outcome{Result: Success, Output: out, Warning: fmt.Sprintf("Probe terminated redirects, Response body: %s", out)}, nil
		}
		return Outcome{Result: Success, Output: out}, nil
	}
	return Outcome{Result: Failure, Output: fmt.Sprintf("HTTP probe failed with statuscode: %d", code)}, nil
}

func (r *Runner) tcp(ctx context.Context, t Target) (Outcome, error) {
	s := t.Probe.TCPSocket
	port, bad := resolvePort(intOrString{isName: s.Port.Type == intstr.String, name: s.Port.StrVal, num: int(s.Port.IntVal)}, t.Container)
	if bad != "" {
		return Outcome{Result: Failure, Output: bad}, nil
	}
	host := s.Host
	if host == "" {
		host = t.PodIP
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return Outcome{Result: Failure, Output: err.Error()}, nil
	}
	_ = conn.Close()
	return Outcome{Result: Success}, nil
}

func (r *Runner) grpc(ctx context.Context, t Target, timeout time.Duration) (Outcome, error) {
	g := t.Probe.GRPC
	if g.Port < 1 || g.Port > 65535 {
		return Outcome{Result: Failure, Output: fmt.Sprintf("invalid port number %d", g.Port)}, nil
	}
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	addr := net.JoinHostPort(t.PodIP, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(r.userAgent))
	if err != nil {
		return Outcome{Result: Failure, Output: fmt.Sprintf("failed to connect service %q: %v", addr, err)}, nil
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{Result: Failure, Output: fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)}, nil
		}
		return Outcome{Result: Failure, Output: fmt.Sprintf("health check of service %q at %s failed: %v", service, addr, err)}, nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Outcome{Result: Failure, Output: fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus())}, nil
	}
	return Outcome{Result: Success}, nil
}
