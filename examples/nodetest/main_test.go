package nodetest_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

func TestMain(m *testing.M) {
	// client-go's error handler rate-limits on the process's real start
	// time, which a bubble's clock (starting in 2000) would make years
	// long: see examples/apiserver's TestMain.
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(context.Context, error, string, ...any) {}}
	goleak.VerifyTestMain(m)
}
