package apiserver

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

func TestMain(m *testing.M) {
	// A reflector reports a failed list or watch through
	// utilruntime.HandleError, whose rate limiter remembers the real time
	// the process started: in a synctest bubble, whose clock starts in
	// 2000, its first wait is 26 years and the reflector never retries.
	// The tests of a server that does not answer need the retries; they
	// read the adapters' own logs, not client-go's.
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(context.Context, error, string, ...any) {}}
	goleak.VerifyTestMain(m)
}
