package cgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// RuntimeConfigGetter is the piece of the CRI that tells the runtime's
// configuration, its cgroup driver among it (cri.StatusReporter has it;
// cri.Client sends the RuntimeConfig RPC).
type RuntimeConfigGetter interface {
	RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error)
}

// ErrUnknownRuntimeDriver: the runtime named a cgroup driver that is
// neither SYSTEMD nor CGROUPFS. Asking again would not change its answer.
var ErrUnknownRuntimeDriver = errors.New("runtime returned an unknown cgroup driver")

// How the runtime is asked, as upstream's kubelet asks at start: three
// calls, two seconds apart when one fails with anything but Unimplemented.
const (
	runtimeDriverAttempts = 3
	runtimeDriverInterval = 2 * time.Second
)

// DriverSource says where DriverFromRuntime took the driver from.
type DriverSource int

// The sources of the driver.
const (
	// DriverFromRuntimeConfig: the runtime's LinuxRuntimeConfiguration.
	DriverFromRuntimeConfig DriverSource = iota
	// DriverConfiguredUnimplemented: the configured driver, the runtime
	// not implementing RuntimeConfig (containerd 1.6).
	DriverConfiguredUnimplemented
	// DriverConfiguredNoLinux: the configured driver, the runtime's answer
	// holding no Linux configuration.
	DriverConfiguredNoLinux
)

// DriverFromRuntime decides the cgroup driver from the runtime's answer to
// RuntimeConfig (resp, err), as upstream's kubelet does since
// KubeletCgroupDriverFromCRI: the runtime's SYSTEMD or CGROUPFS wins over
// configured; configured stays when the runtime does not implement the call
// (err wraps cri.ErrUnimplemented, or carries the gRPC code Unimplemented)
// or answers without a Linux configuration. A driver the runtime names that
// is neither is an error wrapping ErrUnknownRuntimeDriver; any other error
// of the call is returned as it is, for the caller to ask again. With an
// error, the driver returned is configured and the source means nothing.
func DriverFromRuntime(configured Driver, resp *runtimeapi.RuntimeConfigResponse, err error) (Driver, DriverSource, error) {
	if err != nil {
		if errors.Is(err, cri.ErrUnimplemented) || status.Code(err) == codes.Unimplemented {
			return configured, DriverConfiguredUnimplemented, nil
		}
		return configured, DriverConfiguredUnimplemented, err
	}
	linux := resp.GetLinux()
	if linux == nil {
		return configured, DriverConfiguredNoLinux, nil
	}
	switch d := linux.GetCgroupDriver(); d {
	case runtimeapi.CgroupDriver_SYSTEMD:
		return DriverSystemd, DriverFromRuntimeConfig, nil
	case runtimeapi.CgroupDriver_CGROUPFS:
		return DriverCgroupfs, DriverFromRuntimeConfig, nil
	default:
		return configured, DriverFromRuntimeConfig, fmt.Errorf("%w %d", ErrUnknownRuntimeDriver, d)
	}
}

// RuntimeDriver asks rt for its cgroup driver, as upstream's kubelet does
// at start: up to three calls, waiting two seconds on clk after one that
// fails with an error other than Unimplemented (a runtime still starting);
// the last such error is returned. A runtime that does not implement the
// call (containerd 1.6) leaves configured, logged at Info as upstream's.
// The decision is DriverFromRuntime's.
func RuntimeDriver(ctx context.Context, rt RuntimeConfigGetter, configured Driver, clk clock.Clock, log *slog.Logger) (Driver, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Debug("Getting CRI runtime configuration information")
	for attempt := 1; ; attempt++ {
		resp, callErr := rt.RuntimeConfig(ctx)
		d, src, err := DriverFromRuntime(configured, resp, callErr)
		switch {
		case err == nil && src == DriverConfiguredUnimplemented:
			log.Info("CRI implementation should be updated to support RuntimeConfig when KubeletCgroupDriverFromCRI feature gate has been enabled. Falling back to using cgroupDriver from kubelet config.")
			return d, nil
		case err == nil && src == DriverFromRuntimeConfig:
			log.Info("Using cgroup driver setting received from the CRI runtime", "cgroupDriver", d)
			return d, nil
		case err == nil:
			return d, nil
		case callErr == nil || attempt == runtimeDriverAttempts:
			return configured, fmt.Errorf("cgroups: cgroup driver from the runtime: %w", err)
		}
		log.Debug("RuntimeConfig failed, asking again", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return configured, fmt.Errorf("cgroups: cgroup driver from the runtime: %w", ctx.Err())
		case <-clk.After(runtimeDriverInterval):
		}
	}
}
