package vkprovider_test

import (
	"testing"

	"go.uber.org/goleak"
)

// spdystream's connection shutdown goroutine ends within a second of both
// ends closing a session's connection; opencensus, which VK imports,
// starts its stats worker in an init function.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}
