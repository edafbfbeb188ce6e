// Package cri is how kubeletkit talks to a container runtime: the Container
// Runtime Interface (CRI v1) cut into small interfaces, a client for real
// runtimes (containerd, CRI-O) and a server that puts any implementation on a
// unix socket.
//
// # Interfaces
//
// CRI v1 is split by concern: Versioner, SandboxManager, ContainerManager,
// Execer, Streamer, StatsProvider, EventSource and StatusReporter compose
// RuntimeService; ImageManager and ImageFSInfoer compose ImageService. The
// messages are those of k8s.io/cri-api/pkg/apis/runtime/v1, unchanged. A
// consumer asks for the piece it needs (a PLEG that lists containers needs a
// SandboxManager and a ContainerManager, or a narrower interface of its own),
// and both the Client and fake.Runtime satisfy it.
//
// Every method takes ctx first. Container events are an iterator that ends
// with ctx:
//
//	for ev, err := range rt.GetContainerEvents(ctx) {
//		if err != nil {
//			// the stream failed (or the runtime lacks it: ErrUnimplemented); relist and retry
//			break
//		}
//		handle(ev)
//	}
//
// # Client
//
// Dial connects to "unix:///run/containerd/containerd.sock" (or a bare path),
// checks with a Version call that a CRI v1 runtime answers there, and returns a
// *Client. Each call is bounded by DialOptions.Timeout (2m, upstream's runtime
// request timeout); PullImage by ImagePullTimeout instead (none by default, as
// upstream); StopContainer and ExecSync get their own timeouts added on top.
// Dial's errors say what is wrong: no socket at the path, a path that is not a
// socket, nothing listening, something that is not a CRI v1 runtime (ErrNotCRI),
// no answer in time.
//
// # Errors
//
// Errors from the client are *Error values carrying the method, the gRPC code
// and the runtime's message. They satisfy errors.Is with the sentinel of their
// code: ErrNotFound, ErrAlreadyExists, ErrInvalidArgument,
// ErrFailedPrecondition, ErrUnimplemented, ErrTimeout, ErrUnavailable. A call
// cut short by the caller's ctx returns an error wrapping ctx.Err().
// Implementations served by NewServer return errors wrapping the same
// sentinels, and the server sends the matching gRPC code (ToStatus), so a
// sentinel survives the round trip through a socket.
//
// # Server
//
// NewServer serves any RuntimeService and ImageService (for example the
// in-process fake runtime of package cri/fake) over gRPC. Serve(ctx, listener)
// and ListenAndServe(ctx, endpoint) run until ctx ends, then end event streams,
// give calls in flight ServerOptions.ShutdownTimeout to finish, and return
// after every goroutine they started has ended. crictl and critest talk to it
// as to any runtime, within what the served implementation supports.
//
// # Fakes
//
// Package cri/fake is an in-memory runtime implementing RuntimeService and
// ImageService, with scripted container behaviour, fault injection and an
// injected clock.
package cri
