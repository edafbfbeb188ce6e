package agent

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/memorymanager"
	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podresources"
	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/volume"
)

// noMetrics is the Metrics of an agent given none.
type noMetrics struct{}

var _ Metrics = noMetrics{}

func (noMetrics) RelistDuration(time.Duration)           {}
func (noMetrics) RelistInterval(time.Duration)           {}
func (noMetrics) LastSeen(time.Time)                     {}
func (noMetrics) EventsCoalesced(int)                    {}
func (noMetrics) StreamState(pleg.StreamState)           {}
func (noMetrics) ObserveWork(podworkers.WorkObservation) {}
func (noMetrics) PodStartDuration(time.Duration)         {}
func (noMetrics) Event(string, string)                   {}

// ProbeMetrics is an optional extension of Metrics: when Options.Metrics
// also implements it, the agent reports every probe run to it, as
// upstream's prober_probe_total counts them.
type ProbeMetrics interface {
	// ObserveProbe counts one run of a container's probe that gave a
	// result (Success or Failure); a probe that could not be run, or
	// whose run was cut short by the pod's removal, is not counted.
	ObserveProbe(pod *v1.Pod, container string, t prober.ProbeType, r prober.Result)
	// ForgetProbes is called once the agent has forgotten a finished pod:
	// nothing more of its probes will be observed.
	ForgetProbes(uid types.UID)
}

// ProbeDurationMetrics is an optional extension of Metrics, beside
// ProbeMetrics: when Options.Metrics also implements it, the agent tells
// it how long each probe run that ProbeMetrics counts took, as upstream's
// prober_probe_duration_seconds times them (upstream keeps the runs that
// succeeded or whose result is unknown, not the failures: the adapter
// chooses). Its series go when ProbeMetrics.ForgetProbes is called.
type ProbeDurationMetrics interface {
	// ObserveProbeDuration times one run of a container's probe that
	// gave result r: d is from just before the probe was run to its
	// result, on the agent's clock.
	ObserveProbeDuration(pod *v1.Pod, container string, t prober.ProbeType, r prober.Result, d time.Duration)
}

// PodStartMetrics is an optional extension of Metrics: when
// Options.Metrics also implements it, the agent reports each pod's start as
// upstream's pod startup latency tracker does (package status/startup
// decides which pods count and what is measured).
type PodStartMetrics interface {
	// PodStartTotalDuration observes how long after its creation a pod
	// had every container running (kubelet_pod_start_total_duration_seconds).
	PodStartTotalDuration(d time.Duration)
	// PodStartSLIDuration observes the same, less the time spent pulling
	// images and running init containers, for the pods the pod startup
	// latency SLI counts (kubelet_pod_start_sli_duration_seconds).
	PodStartSLIDuration(d time.Duration)
}

// ImagePullMetrics is an optional extension of Metrics: when
// Options.Metrics also implements it, the agent reports every image it
// pulled (kubelet_image_pull_duration_seconds).
type ImagePullMetrics interface {
	// ImagePulled observes one successful pull: d is from the pull's start
	// (any wait for a pull slot included) to its end, size the image's
	// size in bytes as the runtime reported it after the pull (0 when it
	// did not).
	ImagePulled(d time.Duration, size uint64)
}

// StartMetrics is an optional extension of Metrics: when Options.Metrics
// also implements it, the agent reports every pod sandbox and container it
// tries to start, as upstream's kubelet_started_pods_total,
// kubelet_started_pods_errors_total, kubelet_started_containers_total and
// kubelet_started_containers_errors_total count them.
type StartMetrics interface {
	// StartedPod counts one attempt to create a pod's sandbox; failed
	// tells whether it failed.
	StartedPod(failed bool)
	// StartedContainer counts one attempt to start a container (one held
	// back by its crash-loop back-off is no attempt): containerType is
	// "container" or "init_container" (sidecars included), code is "" when
	// it started, else the waiting reason it failed with (ErrImagePull,
	// ImagePullBackOff, CreateContainerConfigError, CreateContainerError,
	// RunContainerError, PostStartHookError ...).
	StartedContainer(containerType, code string)
}

// EvictionMetrics is an optional extension of Metrics: when Options.Metrics
// also implements it, the agent reports every eviction to it with the
// signal that decided it, as upstream's kubelet_evictions counts them.
type EvictionMetrics interface {
	// Evicted counts one pod evicted for signal (memory.available,
	// nodefs.available ..., or a local storage limit: emptydirfs.limit,
	// ephemeralpodfs.limit, ephemeralcontainerfs.limit).
	Evicted(signal string)
}

// ResourceMetrics is an optional extension of Metrics: when Options.Metrics
// also implements it, the CPU manager reports its figures to it
// (cpumanager.Metrics: upstream's cpu_manager_* series and
// container_aligned_compute_resources_*), the memory manager its pinning
// requests (memorymanager.Metrics: memory_manager_pinning_requests_total
// and _errors_total), and every admission through the
// topology manager is timed and counted, as upstream's
// topology_manager_admission_requests_total, _errors_total and
// _duration_ms count them. Only with Options.Resources (a manager built).
type ResourceMetrics interface {
	cpumanager.Metrics
	memorymanager.Metrics
	// TopologyAdmission is one pod's admission through the topology
	// manager: its duration on the agent's clock and whether the pod was
	// refused. It must not block.
	TopologyAdmission(d time.Duration, refused bool)
}

// VolumeMetrics is an optional extension of Metrics: when Options.Metrics
// also implements it, the agent reports the volume manager's operations to
// it, as upstream's storage_operation_duration_seconds observes them, and
// gives it the count of the manager's volumes, as upstream's
// volume_manager_total_volumes reads them.
type VolumeMetrics interface {
	// ObserveVolumeOperation is volume.Metrics' ObserveOperation: one
	// operation op (volume.OpVerifyAttached, OpMount, OpUnmount,
	// OpUnmountDevice) of a volume of plugin (volume.QualifiedPluginName,
	// e.g. "kubernetes.io/empty-dir", "kubernetes.io/csi:<driver>"),
	// its duration on the agent's clock and its error (nil: success). It
	// is called from the operations' goroutines and must not block.
	ObserveVolumeOperation(op, plugin string, d time.Duration, err error)
	// CountVolumes is called once, by New, with the function that counts
	// the volume manager's desired and set-up volumes by plugin
	// (volume.Manager.VolumeCounts), cheap enough for every scrape.
	CountVolumes(count func() []volume.VolumeCount)
}

// DRAMetrics is an optional extension of Metrics: when Options.Metrics
// also implements it, the DRA manager reports to it how long it took to
// prepare and unprepare each pod's resource claims and each of its calls
// to the drivers' kubelet plugins, as upstream's
// dra_operations_duration_seconds and dra_grpc_operations_duration_seconds
// observe them, and it is given the count of the claims in use, as
// upstream's dra_resource_claims_in_use reads it.
type DRAMetrics interface {
	// ObserveDRAOperation is dra.Metrics' ObserveOperation: operation
	// dra.OpPrepareResources (before a pod's sandbox is created) or
	// dra.OpUnprepareResources (once its containers have stopped), its
	// duration on the agent's clock and its error (nil: success). It is
	// called from the pods' syncs and must not block.
	ObserveDRAOperation(operation string, d time.Duration, err error)
	// ObserveDRACall is dra.Metrics' ObserveCall: one gRPC call to a
	// plugin of driver, its full method name
	// ("/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
	// ...), status code and duration on the agent's clock. It must not
	// block.
	ObserveDRACall(driver, method string, code codes.Code, d time.Duration)
	// CountDRAClaims is called once, by New, with the function that
	// counts the claims in use by driver and under dra.AnyDriver
	// (dra.Manager.ClaimsInUse), cheap enough for every scrape.
	CountDRAClaims(count func() map[string]int)
}

// draMetrics is the DRA manager's Metrics: the agent's DRAMetrics, or nil
// when it has none.
func draMetrics(metrics Metrics) dra.Metrics {
	if dm, ok := metrics.(DRAMetrics); ok {
		return draObserver{dm}
	}
	return nil
}

// draObserver adapts DRAMetrics to dra.Metrics.
type draObserver struct{ m DRAMetrics }

var _ dra.Metrics = draObserver{}

func (o draObserver) ObserveOperation(operation string, d time.Duration, err error) {
	o.m.ObserveDRAOperation(operation, d, err)
}

func (o draObserver) ObserveCall(driver, method string, code codes.Code, d time.Duration) {
	o.m.ObserveDRACall(driver, method, code, d)
}

// volumeMetrics is the volume manager's Metrics: the agent's
// VolumeMetrics, or nil when it has none.
func volumeMetrics(metrics Metrics) volume.Metrics {
	if vm, ok := metrics.(VolumeMetrics); ok {
		return volume.MetricsFunc(vm.ObserveVolumeOperation)
	}
	return nil
}

// countingProber wraps the probe runner so that every probe run that gave
// a result is counted by ProbeMetrics, and timed on clk by
// ProbeDurationMetrics, when the agent's Metrics have them.
func countingProber(metrics Metrics, clk clock.PassiveClock, r prober.ProbeRunner) prober.ProbeRunner {
	pm, counts := metrics.(ProbeMetrics)
	dm, times := metrics.(ProbeDurationMetrics)
	if !counts && !times {
		return r
	}
	return prober.ProbeRunnerFunc(func(ctx context.Context, t prober.Target) (prober.Outcome, error) {
		start := clk.Now()
		out, err := r.Probe(ctx, t)
		// As the manager does, a run that errored or that the end of its
		// context cut short gives no result.
		if err == nil && ctx.Err() == nil && t.Pod != nil && t.Container != nil {
			if counts {
				pm.ObserveProbe(t.Pod, t.Container.Name, t.Type, out.Result)
			}
			if times {
				dm.ObserveProbeDuration(t.Pod, t.Container.Name, t.Type, out.Result, clk.Since(start))
			}
		}
		return out, err
	})
}

// forgetProbeMetrics tells ProbeMetrics that a finished pod is forgotten.
func forgetProbeMetrics(metrics Metrics) podForgetter {
	return forgetFunc(func(uid types.UID) {
		if pm, ok := metrics.(ProbeMetrics); ok {
			pm.ForgetProbes(uid)
		}
	})
}

// countStarts reports the sandbox and container starts a sync attempted to
// StartMetrics, when the agent's Metrics have them.
func (s *podSyncer) countStarts(res podsync.Result) {
	sm, ok := s.metrics.(StartMetrics)
	if !ok {
		return
	}
	for _, s := range res.Steps {
		switch s.Step {
		case podsync.StepCreateSandbox:
			// A sandbox step of a sync that was not to create one is a
			// pod that could not be synced at all.
			if res.Actions.CreateSandbox {
				sm.StartedPod(s.Err != nil)
			}
		case podsync.StepInitContainer, podsync.StepStartContainer:
			if errors.Is(s.Err, podsync.ErrCrashLoopBackOff) {
				continue
			}
			typ := "container"
			if s.Step == podsync.StepInitContainer {
				typ = "init_container"
			}
			code := ""
			if s.Err != nil {
				if code = s.Reason; code == "" {
					code = "Unknown"
				}
			}
			sm.StartedContainer(typ, code)
		}
	}
}

// PodResourcesMetrics is an optional extension of Metrics: when
// Options.Metrics also implements it, the pod-resources API served on its
// socket (HTTP.PodResources) counts every call it answers to it, as
// upstream's kubelet_pod_resources_endpoint_requests_* and _errors_*
// count them (podresources.Metrics).
type PodResourcesMetrics interface {
	// PodResourcesRequest counts one call answered: version
	// podresources.VersionV1 or VersionV1alpha1, method
	// podresources.MethodList, MethodGet or MethodGetAllocatableResources,
	// failed when it answered an error. It must not block.
	PodResourcesRequest(version, method string, failed bool)
}

// podResourcesMetrics is the pod-resources server's Metrics: the agent's
// PodResourcesMetrics, or nil when it has none.
func podResourcesMetrics(metrics Metrics) podresources.Metrics {
	if pm, ok := metrics.(PodResourcesMetrics); ok {
		return podResourcesCounter{pm}
	}
	return nil
}

// podResourcesCounter adapts PodResourcesMetrics to podresources.Metrics.
type podResourcesCounter struct{ m PodResourcesMetrics }

func (c podResourcesCounter) Request(version, method string, failed bool) {
	c.m.PodResourcesRequest(version, method, failed)
}
