package prometheus

import (
	"context"
	"iter"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
)

// InstrumentRuntime returns rt measured as upstream kubelet measures its
// CRI clients: every call counts in kubelet_runtime_operations_total and
// kubelet_runtime_operations_duration_seconds, and every call that fails in
// kubelet_runtime_operations_errors_total, by operation_type (upstream's
// names: run_podsandbox, create_container, list_containers, exec_sync,
// pull_image ...). A GetContainerEvents stream is one operation, measured
// when the caller stops reading it or it ends, and failed when it yields
// an error. Give the result to agent.Options.Runtime.
//
// It takes and returns an agent.FullRuntime (cri.Dial's client,
// *fake.Runtime): a wrapper has every method it declares, so wrapping a
// runtime without some optional capability would make the agent find the
// capability and then fail each call, where without the wrapper it does
// without it once, cleanly.
func (m *Metrics) InstrumentRuntime(rt agent.FullRuntime) agent.FullRuntime {
	return &instrumented{rt: rt, m: m}
}

// instrumented is an agent.FullRuntime whose every call is measured.
type instrumented struct {
	rt agent.FullRuntime
	m  *Metrics
}

var _ agent.FullRuntime = (*instrumented)(nil)

// measure runs one call of operation op and records it.
func measure[T any](in *instrumented, op string, call func() (T, error)) (T, error) {
	start := in.m.clock.Now()
	v, err := call()
	in.m.observeRuntime(op, start, err)
	return v, err
}

// measureErr is measure for a call that returns only an error.
func measureErr(in *instrumented, op string, call func() error) error {
	_, err := measure(in, op, func() (struct{}, error) { return struct{}{}, call() })
	return err
}

// observeRuntime records one runtime operation that started at start.
func (m *Metrics) observeRuntime(op string, start time.Time, err error) {
	m.runtimeOps.WithLabelValues(op).Inc()
	m.runtimeDuration.WithLabelValues(op).Observe(m.clock.Since(start).Seconds())
	if err != nil {
		m.runtimeErrors.WithLabelValues(op).Inc()
	}
}

func (in *instrumented) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return measure(in, "version", func() (*runtimeapi.VersionResponse, error) { return in.rt.Version(ctx, apiVersion) })
}

func (in *instrumented) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	return measure(in, "run_podsandbox", func() (string, error) { return in.rt.RunPodSandbox(ctx, config, runtimeHandler) })
}

func (in *instrumented) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	return measureErr(in, "stop_podsandbox", func() error { return in.rt.StopPodSandbox(ctx, podSandboxID) })
}

func (in *instrumented) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	return measureErr(in, "remove_podsandbox", func() error { return in.rt.RemovePodSandbox(ctx, podSandboxID) })
}

func (in *instrumented) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return measure(in, "podsandbox_status", func() (*runtimeapi.PodSandboxStatusResponse, error) {
		return in.rt.PodSandboxStatus(ctx, podSandboxID, verbose)
	})
}

func (in *instrumented) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return measure(in, "list_podsandbox", func() ([]*runtimeapi.PodSandbox, error) { return in.rt.ListPodSandbox(ctx, filter) })
}

func (in *instrumented) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return measure(in, "create_container", func() (string, error) {
		return in.rt.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
	})
}

func (in *instrumented) StartContainer(ctx context.Context, containerID string) error {
	return measureErr(in, "start_container", func() error { return in.rt.StartContainer(ctx, containerID) })
}

func (in *instrumented) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	return measureErr(in, "stop_container", func() error { return in.rt.StopContainer(ctx, containerID, timeout) })
}

func (in *instrumented) RemoveContainer(ctx context.Context, containerID string) error {
	return measureErr(in, "remove_container", func() error { return in.rt.RemoveContainer(ctx, containerID) })
}

func (in *instrumented) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return measure(in, "list_containers", func() ([]*runtimeapi.Container, error) { return in.rt.ListContainers(ctx, filter) })
}

func (in *instrumented) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return measure(in, "container_status", func() (*runtimeapi.ContainerStatusResponse, error) {
		return in.rt.ContainerStatus(ctx, containerID, verbose)
	})
}

func (in *instrumented) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	return measureErr(in, "update_container", func() error { return in.rt.UpdateContainerResources(ctx, containerID, resources) })
}

func (in *instrumented) ReopenContainerLog(ctx context.Context, containerID string) error {
	return measureErr(in, "reopen_container_log", func() error { return in.rt.ReopenContainerLog(ctx, containerID) })
}

func (in *instrumented) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	return measure(in, "exec_sync", func() (*runtimeapi.ExecSyncResponse, error) { return in.rt.ExecSync(ctx, containerID, cmd, timeout) })
}

func (in *instrumented) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return measure(in, "exec", func() (*runtimeapi.ExecResponse, error) { return in.rt.Exec(ctx, req) })
}

func (in *instrumented) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return measure(in, "attach", func() (*runtimeapi.AttachResponse, error) { return in.rt.Attach(ctx, req) })
}

func (in *instrumented) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return measure(in, "port_forward", func() (*runtimeapi.PortForwardResponse, error) { return in.rt.PortForward(ctx, req) })
}

func (in *instrumented) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	return measure(in, "container_stats", func() (*runtimeapi.ContainerStats, error) { return in.rt.ContainerStats(ctx, containerID) })
}

func (in *instrumented) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return measure(in, "list_container_stats", func() ([]*runtimeapi.ContainerStats, error) {
		return in.rt.ListContainerStats(ctx, filter)
	})
}

func (in *instrumented) PodSandboxStats(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStats, error) {
	return measure(in, "podsandbox_stats", func() (*runtimeapi.PodSandboxStats, error) { return in.rt.PodSandboxStats(ctx, podSandboxID) })
}

func (in *instrumented) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return measure(in, "list_podsandbox_stats", func() ([]*runtimeapi.PodSandboxStats, error) {
		return in.rt.ListPodSandboxStats(ctx, filter)
	})
}

func (in *instrumented) GetContainerEvents(ctx context.Context) iter.Seq2[*runtimeapi.ContainerEventResponse, error] {
	events := in.rt.GetContainerEvents(ctx)
	return func(yield func(*runtimeapi.ContainerEventResponse, error) bool) {
		start := in.m.clock.Now()
		var failed error
		for ev, err := range events {
			if err != nil {
				failed = err
			}
			if !yield(ev, err) {
				break
			}
		}
		in.m.observeRuntime("get_container_events", start, failed)
	}
}

func (in *instrumented) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return measure(in, "status", func() (*runtimeapi.StatusResponse, error) { return in.rt.Status(ctx, verbose) })
}

func (in *instrumented) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	return measureErr(in, "update_runtime_config", func() error { return in.rt.UpdateRuntimeConfig(ctx, config) })
}

func (in *instrumented) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return measure(in, "runtime_config", func() (*runtimeapi.RuntimeConfigResponse, error) { return in.rt.RuntimeConfig(ctx) })
}

func (in *instrumented) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return measure(in, "list_images", func() ([]*runtimeapi.Image, error) { return in.rt.ListImages(ctx, filter) })
}

func (in *instrumented) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return measure(in, "image_status", func() (*runtimeapi.ImageStatusResponse, error) { return in.rt.ImageStatus(ctx, image, verbose) })
}

func (in *instrumented) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return measure(in, "pull_image", func() (string, error) { return in.rt.PullImage(ctx, image, auth, sandboxConfig) })
}

func (in *instrumented) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return measureErr(in, "remove_image", func() error { return in.rt.RemoveImage(ctx, image) })
}

func (in *instrumented) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return measure(in, "image_fs_info", func() (*runtimeapi.ImageFsInfoResponse, error) { return in.rt.ImageFsInfo(ctx) })
}
