package websockets_test

import (
	"testing"

	"go.uber.org/goleak"
)

// spdystream's Connection.Close hands its close error to a goroutine that
// waits up to one second (real time) for a reader that never comes: at the
// end of each session both ends of a SPDY connection close (the
// translator's and the fake runtime's), and the second one's goroutine
// outlives the test by up to that second. It always ends; everything else
// must not leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}
