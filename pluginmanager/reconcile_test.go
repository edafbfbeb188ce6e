package pluginmanager_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/pluginmanager"
)

func TestReconcile(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sock := func(path, id string) pluginmanager.Socket { return pluginmanager.Socket{Path: path, ID: id} }
	reg := func(path, id, name string) pluginmanager.Registered {
		return pluginmanager.Registered{Socket: sock(path, id), Type: "CSIPlugin", Name: name, Endpoint: path}
	}
	type (
		present    = map[string]pluginmanager.Socket
		registered = map[string]pluginmanager.Registered
		backoff    = map[string]pluginmanager.Backoff
	)
	for _, tc := range []struct {
		name       string
		present    present
		registered registered
		backoff    backoff
		want       []pluginmanager.Action
	}{
		{name: "nothing"},
		{name: "new sockets register, in path order",
			present: present{"/r/b.sock": sock("/r/b.sock", "2"), "/r/a.sock": sock("/r/a.sock", "1")},
			want: []pluginmanager.Action{
				{Kind: pluginmanager.Register, Socket: sock("/r/a.sock", "1")},
				{Kind: pluginmanager.Register, Socket: sock("/r/b.sock", "2")},
			}},
		{name: "registered and present: nothing",
			present:    present{"/r/a.sock": sock("/r/a.sock", "1")},
			registered: registered{"/r/a.sock": reg("/r/a.sock", "1", "a")}},
		{name: "gone: deregister",
			registered: registered{"/r/a.sock": reg("/r/a.sock", "1", "a")},
			want:       []pluginmanager.Action{{Kind: pluginmanager.Deregister, Plugin: reg("/r/a.sock", "1", "a")}}},
		{name: "made anew: deregister first, then register",
			present:    present{"/r/a.sock": sock("/r/a.sock", "9")},
			registered: registered{"/r/a.sock": reg("/r/a.sock", "1", "a")},
			want: []pluginmanager.Action{
				{Kind: pluginmanager.Deregister, Plugin: reg("/r/a.sock", "1", "a")},
				{Kind: pluginmanager.Register, Socket: sock("/r/a.sock", "9")},
			}},
		{name: "in back-off: wait",
			present: present{"/r/a.sock": sock("/r/a.sock", "1")},
			backoff: backoff{"/r/a.sock": {ID: "1", Until: now.Add(time.Millisecond), Next: time.Second}}},
		{name: "back-off over: try again",
			present: present{"/r/a.sock": sock("/r/a.sock", "1")},
			backoff: backoff{"/r/a.sock": {ID: "1", Until: now, Next: time.Second}},
			want:    []pluginmanager.Action{{Kind: pluginmanager.Register, Socket: sock("/r/a.sock", "1")}}},
		{name: "a new socket at a backed-off path starts afresh",
			present: present{"/r/a.sock": sock("/r/a.sock", "2")},
			backoff: backoff{"/r/a.sock": {ID: "1", Until: now.Add(time.Minute), Next: time.Minute}},
			want:    []pluginmanager.Action{{Kind: pluginmanager.Register, Socket: sock("/r/a.sock", "2")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, pluginmanager.Reconcile(tc.present, tc.registered, tc.backoff, now))
		})
	}
}

// Failed doubles the wait from 500ms up to 2m2s, upstream's exponential
// back-off, and starts afresh for a new socket at the path.
func TestFailed(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := pluginmanager.Socket{Path: "/r/a.sock", ID: "1"}
	var b pluginmanager.Backoff
	var waits []time.Duration
	for range 10 {
		b = pluginmanager.Failed(b, s, now)
		waits = append(waits, b.Until.Sub(now))
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{500 * ms, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, 122 * time.Second, 122 * time.Second}, waits)
	b = pluginmanager.Failed(b, pluginmanager.Socket{Path: "/r/a.sock", ID: "2"}, now)
	assert.Equal(t, 500*ms, b.Until.Sub(now), "a new socket")
}
