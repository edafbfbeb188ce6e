package vkprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/kubeletkit/kubeletkit/server"
)

// podForRequest returns the stored pod of a kubelet API request with its
// status.
func (p *Provider) podForRequest(namespace, name string) (*v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.pods[key(namespace, name)]
	if !ok {
		return nil, podNotFound(namespace, name)
	}
	return e.withStatus(), nil
}

// logOptions turns VK's log options into the kubelet API's. VK reads
// tailLines=0 as no option at all, so 0 means every line here.
func logOptions(container string, o api.ContainerLogOpts) *v1.PodLogOptions {
	out := &v1.PodLogOptions{Container: container, Follow: o.Follow, Previous: o.Previous, Timestamps: o.Timestamps}
	if o.Tail > 0 {
		out.TailLines = ptr.To(int64(o.Tail))
	}
	if o.LimitBytes > 0 {
		out.LimitBytes = ptr.To(int64(o.LimitBytes))
	}
	if o.SinceSeconds > 0 {
		out.SinceSeconds = ptr.To(int64(o.SinceSeconds))
	}
	if !o.SinceTime.IsZero() {
		out.SinceTime = &metav1.Time{Time: o.SinceTime}
	}
	return out
}

// GetContainerLogs implements nodeutil.Provider with agent.ContainerLogs:
// the container's log read from the file the runtime writes, followed
// with opts.Follow, streamed through a pipe. A container with no log to
// read is invalid input (400), with upstream's message; an unknown pod is
// NotFound. Reading ends when ctx ends, the reader is closed, or Run
// returns.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	pod, err := p.podForRequest(namespace, podName)
	if err != nil {
		return nil, err
	}
	ctx, cancel := p.requestContext(ctx)
	pr, pw := io.Pipe()
	first := &firstWrite{w: pw, wrote: make(chan struct{})}
	done := make(chan error, 1)
	p.requests.Go(func() {
		defer cancel()
		err := p.agent.API().ContainerLogs(ctx, pod, containerName, logOptions(containerName, opts), first, first)
		pw.CloseWithError(err)
		done <- err
	})
	// An error before the first byte (no such container, no log yet) is
	// the answer; later ones end the stream.
	select {
	case <-first.wrote:
		return pr, nil
	case err := <-done:
		if err == nil {
			return pr, nil
		}
		pr.Close()
		if errors.Is(err, server.ErrBadRequest) {
			return nil, errdefs.AsInvalidInput(err)
		}
		return nil, err
	}
}

// firstWrite is the writer of a log stream; wrote closes at its first
// write.
type firstWrite struct {
	w     io.Writer
	once  sync.Once
	wrote chan struct{}
	mu    sync.Mutex // stdout and stderr share it
}

// Write writes b, closing wrote the first time.
func (f *firstWrite) Write(b []byte) (int, error) {
	f.once.Do(func() { close(f.wrote) })
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(b)
}

// requestContext is ctx, also ended when Run returns, so that no stream
// outlives the provider.
func (p *Provider) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.lifetime, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// RunInContainer implements nodeutil.Provider: agent.Exec gives the
// runtime's streaming URL for the command, and the provider talks to it as
// kubectl does (client-go's SPDY remotecommand executor), copying VK's
// streams and terminal resizes. A non-zero exit is returned as client-go's
// exec.CodeExitError, which VK reports as the exit code.
func (p *Provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	pod, err := p.podForRequest(namespace, podName)
	if err != nil {
		return err
	}
	ctx, cancel := p.requestContext(ctx)
	defer cancel()
	u, err := p.agent.API().Exec(ctx, pod, containerName, cmd, streamOptions(attach))
	if err != nil {
		return fmt.Errorf("exec in %s/%s/%s: %w", namespace, podName, containerName, err)
	}
	return stream(ctx, u, attach)
}

// AttachToContainer implements nodeutil.Provider as RunInContainer does,
// with agent.Attach: the container's own process.
func (p *Provider) AttachToContainer(ctx context.Context, namespace, podName, containerName string, attach api.AttachIO) error {
	pod, err := p.podForRequest(namespace, podName)
	if err != nil {
		return err
	}
	ctx, cancel := p.requestContext(ctx)
	defer cancel()
	u, err := p.agent.API().Attach(ctx, pod, containerName, streamOptions(attach))
	if err != nil {
		return fmt.Errorf("attach to %s/%s/%s: %w", namespace, podName, containerName, err)
	}
	return stream(ctx, u, attach)
}

// streamOptions are the streams VK's client asked for. With a terminal
// there is no separate stderr, as the CRI requires.
func streamOptions(a api.AttachIO) server.StreamOptions {
	return server.StreamOptions{Stdin: a.Stdin() != nil, Stdout: a.Stdout() != nil, Stderr: a.Stderr() != nil && !a.TTY(), TTY: a.TTY()}
}

// stream runs a remotecommand session on the runtime's URL u with VK's
// streams.
func stream(ctx context.Context, u *url.URL, a api.AttachIO) error {
	e, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		return err
	}
	o := remotecommand.StreamOptions{Tty: a.TTY()}
	if in := a.Stdin(); in != nil {
		o.Stdin = in
	}
	if out := a.Stdout(); out != nil {
		o.Stdout = out
	}
	if errOut := a.Stderr(); errOut != nil && !a.TTY() {
		o.Stderr = errOut
	}
	if a.TTY() && a.Resize() != nil {
		o.TerminalSizeQueue = resizes{ctx: ctx, ch: a.Resize()}
	}
	return e.StreamWithContext(ctx, o)
}

// resizes is VK's resize channel as client-go's TerminalSizeQueue.
type resizes struct {
	ctx context.Context
	ch  <-chan api.TermSize
}

// Next implements remotecommand.TerminalSizeQueue: VK's next size, nil
// once VK closes the channel or ctx ends.
func (r resizes) Next() *remotecommand.TerminalSize {
	select {
	case <-r.ctx.Done():
		return nil
	case s, ok := <-r.ch:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: s.Width, Height: s.Height}
	}
}

// PortForward implements nodeutil.Provider: agent.PortForward gives the
// runtime's streaming URL for the pod's sandbox, and the provider opens
// one forwarded connection to port on it as kubectl port-forward does
// (client-go's SPDY dialer; an error stream and a data stream with the
// port and request ID headers), copying both ways until either side ends.
// An error the runtime reports (nothing listens on the port) is returned.
// stream is closed on return.
func (p *Provider) PortForward(ctx context.Context, namespace, podName string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	pod, err := p.podForRequest(namespace, podName)
	if err != nil {
		return err
	}
	ctx, cancel := p.requestContext(ctx)
	defer cancel()
	u, err := p.agent.API().PortForward(ctx, pod, []int32{port})
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s: %w", namespace, podName, err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		return err
	}
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s: %w", namespace, podName, err)
	}
	defer conn.Close()
	// When ctx ends (or Run returns), both ends are torn down.
	stopOnCancel := context.AfterFunc(ctx, func() {
		conn.Close()
		if r, ok := stream.(interface{ Reset() error }); ok {
			_ = r.Reset()
		} else {
			stream.Close()
		}
	})
	defer stopOnCancel()

	h := http.Header{}
	h.Set(v1.StreamType, v1.StreamTypeError)
	h.Set(v1.PortHeader, strconv.Itoa(int(port)))
	h.Set(v1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s: error stream: %w", namespace, podName, err)
	}
	errStream.Close() // nothing to write on it
	remoteErr := make(chan []byte, 1)
	go func() {
		msg, _ := io.ReadAll(errStream) // ends when the runtime closes it, or conn closes
		remoteErr <- msg
	}()
	defer func() {
		conn.Close()
		<-remoteErr
	}()
	h.Set(v1.StreamType, v1.StreamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		return fmt.Errorf("port-forward to %s/%s: data stream: %w", namespace, podName, err)
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, _ = io.Copy(data, stream)
		data.Close() // tells the runtime that the client sends no more
	}()
	_, _ = io.Copy(stream, data)
	// The pod's end is done: the client reads EOF, and the copy above
	// ends when the client stops sending (or ctx ends).
	stream.Close()
	_ = data.Reset()
	<-sent
	select {
	case msg := <-remoteErr:
		remoteErr <- msg // for the deferred wait
		if len(msg) > 0 {
			// The runtime's message, which VK prefixes with its own.
			return errors.New(string(msg))
		}
	case <-ctx.Done():
	}
	return nil
}
