package dra

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/clock"
)

// AnyDriver is the key under which ClaimsInUse counts every claim in use,
// whatever its drivers: upstream's special driver_name value of
// dra_resource_claims_in_use.
const AnyDriver = "<any>"

// The operations Metrics.ObserveOperation times: upstream's operation_name
// values of dra_operations_duration_seconds.
const (
	OpPrepareResources   = "PrepareResources"
	OpUnprepareResources = "UnprepareResources"
)

// Metrics receives the Manager's measurements, those upstream's kubelet
// serves as dra_operations_duration_seconds and
// dra_grpc_operations_duration_seconds. Durations are taken on the
// Manager's clock (Options.Clock). The methods are called from the
// goroutines of the Manager's callers (a pod's sync) and must not block.
// The claims in use (dra_resource_claims_in_use) are not pushed: the
// adapter reads Manager.ClaimsInUse when it is scraped.
type Metrics interface {
	// ObserveOperation times one call of PrepareResources or
	// UnprepareResources (operation is OpPrepareResources or
	// OpUnprepareResources), every claim of the pod and the checks
	// included, err its error (nil: success). As upstream's, every call is
	// observed, a pod without claims too; UnprepareInactive's calls are
	// not, as upstream's reconcile loop's are not.
	ObserveOperation(operation string, d time.Duration, err error)
	// ObserveCall times one unary gRPC call to a plugin of driver
	// (NodePrepareResources, NodeUnprepareResources): method is the
	// call's full method name, service included
	// ("/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
	// v1beta1's for a plugin that speaks it), code its gRPC status code
	// (codes.OK when it succeeded; codes.DeadlineExceeded past
	// Options.CallTimeout). The health stream is no unary call and is not
	// observed, as upstream's.
	ObserveCall(driver, method string, code codes.Code, d time.Duration)
}

// ClaimsInUse counts the claims the Manager has prepared and not yet
// unprepared, as upstream's dra_resource_claims_in_use: by the driver of
// each of their devices, and all of them under AnyDriver, which is always
// there (0 when none is in use). A claim of two drivers counts once for
// each and once under AnyDriver, so the drivers' counts may add up to
// more. A claim read from the checkpoint is not counted until a sandbox
// prepares it again (see Checkpoint in the package doc). It reads the
// Manager's memory only, never the checkpoint: cheap enough for every
// scrape.
func (m *Manager) ClaimsInUse() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	counts := map[string]int{AnyDriver: 0}
	for _, info := range m.cache {
		if !info.prepared {
			continue
		}
		counts[AnyDriver]++
		for driver := range info.DriverState {
			counts[driver]++
		}
	}
	return counts
}

// observe reports an operation begun at start to the Manager's Metrics.
func (m *Manager) observe(operation string, start time.Time, err error) {
	if m.metrics != nil {
		m.metrics.ObserveOperation(operation, m.clock.Since(start), err)
	}
}

// callTimer is the unary interceptor of a plugin's connection that reports
// each call to metrics, timed on clk.
func callTimer(metrics Metrics, clk clock.PassiveClock, driver string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := clk.Now()
		err := invoke(ctx, method, req, reply, cc, opts...)
		metrics.ObserveCall(driver, method, status.Code(err), clk.Since(start))
		return err
	}
}
