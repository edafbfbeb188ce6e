package fake

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PortHandler answers one forwarded connection to a pod's port in-process:
// conn carries the client's bytes both ways, and the handler returns when it
// is done with it (the fake then closes it). ctx ends when the streaming
// server stops.
type PortHandler func(ctx context.Context, port int32, conn io.ReadWriter) error

// EchoPort is a PortHandler that writes back what it reads until the client
// closes the connection: an echo server, to try port-forwarding with.
func EchoPort(_ context.Context, _ int32, conn io.ReadWriter) error {
	_, err := io.Copy(conn, conn)
	return err
}

var _ PortHandler = EchoPort

// PortRule scripts what answers a port-forward into the pods it matches.
// Every field that is set must match.
type PortRule struct {
	// Image matches a running container of the pod's sandbox by image, as
	// Rule.Image does.
	Image string
	// Name matches a running container of the pod's sandbox by name. A rule
	// with neither Image nor Name matches every ready sandbox.
	Name string
	// Port is the pod's port; 0 matches every port.
	Port int32
	// Address, when set, is a TCP address (host:port) that the fake dials
	// for each connection and copies to and from, so that a real server
	// answers for the pod.
	Address string
	// Handler answers each connection in-process when Address is empty. A
	// rule with neither refuses the connection, as a closed port.
	Handler PortHandler
}

type portRule struct {
	image imageMatcher
	rule  PortRule
}

func compilePortRules(rules []PortRule) []portRule {
	out := make([]portRule, 0, len(rules))
	for _, r := range rules {
		out = append(out, portRule{image: newImageMatcher(r.Image), rule: r})
	}
	return out
}

// SetPortRules replaces the port-forward rules. They apply to the
// connections forwarded from then on.
func (r *Runtime) SetPortRules(rules []PortRule) {
	compiled := compilePortRules(rules)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.portRules = compiled
}

// portRuleLocked returns the first port rule matching port in s.
func (r *Runtime) portRuleLocked(s *sandbox, port int32) (PortRule, bool) {
	for _, pr := range r.portRules {
		if pr.rule.Port != 0 && pr.rule.Port != port {
			continue
		}
		if pr.rule.Image == "" && pr.rule.Name == "" {
			return pr.rule, true
		}
		for _, c := range s.containers {
			if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING &&
				(pr.rule.Name == "" || pr.rule.Name == c.config.GetMetadata().GetName()) &&
				pr.image.match(c.imageNames, c.imageID) {
				return pr.rule, true
			}
		}
	}
	return PortRule{}, false
}

// dialTimeout bounds the dial of a PortRule's Address, as containerd bounds
// its dial into the pod.
const dialTimeout = 5 * time.Second

// closeGrace is how long a forwarded connection whose one direction ended
// waits for the other, as containerd waits (socat's default): real time,
// since it paces a real network peer, whatever the runtime's clock.
const closeGrace = time.Second

// portForward serves one forwarded connection into a sandbox's port (see
// StreamingServer), with containerd's messages for a sandbox that is gone
// and a port where nothing answers.
func (r *Runtime) portForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser, spawn func(func())) error {
	r.mu.Lock()
	s, err := r.sandboxes.resolve(sandboxID, "pod sandbox")
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("failed to find sandbox %q in store: %w", sandboxID, err)
	}
	netns := "/var/run/netns/cni-" + s.id
	if s.config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
		netns = "host"
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		r.mu.Unlock()
		return fmt.Errorf("network namespace for sandbox %q is closed", s.id)
	}
	rule, ok := r.portRuleLocked(s, port)
	r.mu.Unlock()
	r.log.Debug("port forward", "sandbox", s.id, "port", port)
	switch {
	case ok && rule.Address != "":
		d := net.Dialer{Timeout: dialTimeout}
		conn, err := d.DialContext(ctx, "tcp", rule.Address)
		if err != nil {
			return fmt.Errorf("failed to execute portforward in network namespace %q: %w", netns, err)
		}
		defer conn.Close()
		if err := relay(ctx, conn, stream, spawn); err != nil {
			return fmt.Errorf("failed to execute portforward for %q port %d: %w", s.id, port, err)
		}
		return nil
	case ok && rule.Handler != nil:
		if err := rule.Handler(ctx, port, stream); err != nil {
			return fmt.Errorf("failed to execute portforward for %q port %d: %w", s.id, port, err)
		}
		return nil
	}
	return fmt.Errorf("failed to execute portforward in network namespace %q: IPv4: dial tcp4 127.0.0.1:%d: connect: connection refused IPv6: dial tcp6 [::1]:%d: connect: connection refused", netns, port, port)
}

// relay copies between conn and the client's stream until both directions
// end, or one has and the other does not follow within closeGrace, or ctx
// ends. The client's end of input is passed on to conn as a half-close.
func relay(ctx context.Context, conn net.Conn, stream io.ReadWriter, spawn func(func())) error {
	errs := make(chan error, 2)
	spawn(func() {
		_, err := io.Copy(stream, conn)
		errs <- err
	})
	spawn(func() {
		_, err := io.Copy(conn, stream)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		errs <- err
	})
	var first error
	select {
	case first = <-errs:
	case <-ctx.Done():
		return ctx.Err()
	}
	grace := time.NewTimer(closeGrace)
	defer grace.Stop()
	select {
	case err := <-errs:
		if first == nil {
			first = err
		}
	case <-grace.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return first
}
