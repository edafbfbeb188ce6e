package fake_test

import (
	"testing"

	"go.uber.org/goleak"
)

// spdystream's Connection.Close hands its close error to a CloseWait that
// the streaming library never calls, in a goroutine that gives up after one
// second (real time): when both ends close a streaming connection, as they
// do at the end of every session, the second one's goroutine outlives the
// test by up to that second. It always ends; everything else must not leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}
