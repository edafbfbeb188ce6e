package pluginmanager

import (
	"sort"
	"time"
)

// Socket is a plugin socket found in the registry directory.
type Socket struct {
	// Path is the socket's path.
	Path string
	// ID tells a socket apart from one created later at the same path
	// (Scan makes it of the file's device, inode and change time).
	ID string
}

// Registered is a plugin the manager registered.
type Registered struct {
	Socket
	// Type and Name are what the plugin's GetInfo said.
	Type, Name string
	// Endpoint is where the handler reaches the plugin: GetInfo's, or the
	// socket's path when it gave none.
	Endpoint string
}

// Backoff holds a socket's failed registrations: when it may be tried
// again and the wait after the next failure.
type Backoff struct {
	// ID is the socket the failures were of; a new socket at the path
	// starts afresh.
	ID    string
	Until time.Time
	Next  time.Duration
}

// The back-off of failed registrations, upstream's exponential back-off of
// the plugin manager's operations.
const (
	InitialBackoff = 500 * time.Millisecond
	MaxBackoff     = 2*time.Minute + 2*time.Second
)

// ActionKind says what an Action does.
type ActionKind string

// The actions.
const (
	// Register asks a socket's plugin for its info and registers it.
	Register ActionKind = "register"
	// Deregister deregisters a plugin whose socket went away or was
	// created anew.
	Deregister ActionKind = "deregister"
)

// Action is one thing Reconcile asks for.
type Action struct {
	Kind ActionKind
	// Socket is the socket to register (Register).
	Socket Socket
	// Plugin is the plugin to deregister (Deregister).
	Plugin Registered
}

// Reconcile decides what to do so that the plugins registered are those
// of the sockets present: deregister each registered plugin whose socket
// is gone or has another ID (first, so that a restarted plugin is
// deregistered before it registers again), then register each socket
// without a registered plugin of its ID, unless its back-off (of the same
// ID) lasts past now. Sockets and plugins are keyed by path; the actions
// are in path order.
func Reconcile(present map[string]Socket, registered map[string]Registered, backoff map[string]Backoff, now time.Time) []Action {
	var out []Action
	for _, path := range sortedKeys(registered) {
		r := registered[path]
		if s, ok := present[path]; !ok || s.ID != r.ID {
			out = append(out, Action{Kind: Deregister, Plugin: r})
		}
	}
	for _, path := range sortedKeys(present) {
		s := present[path]
		if r, ok := registered[path]; ok && r.ID == s.ID {
			continue
		}
		if b, ok := backoff[path]; ok && b.ID == s.ID && now.Before(b.Until) {
			continue
		}
		out = append(out, Action{Kind: Register, Socket: s})
	}
	return out
}

// Failed is the back-off after a failed registration of s at now, given
// the socket's previous back-off (the zero value for none).
func Failed(prev Backoff, s Socket, now time.Time) Backoff {
	wait := InitialBackoff
	if prev.ID == s.ID && prev.Next > 0 {
		wait = prev.Next
	}
	next := min(2*wait, MaxBackoff)
	return Backoff{ID: s.ID, Until: now.Add(wait), Next: next}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
