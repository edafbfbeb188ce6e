package server_test

import (
	"testing"

	"go.uber.org/goleak"
)

// spdystream's Connection.Close hands its close error to a goroutine that
// waits up to one second (real time) for a reader that never comes: when
// both ends of a SPDY session close, as the tunnelled port forward's test
// and the fake runtime's streaming server do, the second one's goroutine
// outlives the test by up to that second (cri/fake's tests ignore it for
// the same reason). It always ends; everything else must not leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}
