package podsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// Waiting reasons, upstream's, that SyncPod records for a container and
// reports in its steps.
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonImageInspectError          = "ImageInspectError"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
	ReasonPostStartHookError         = "PostStartHookError"
)

// Event reasons, upstream's.
const (
	EventPulling             = "Pulling"
	EventPulled              = "Pulled"
	EventCreated             = "Created"
	EventStarted             = "Started"
	EventKilling             = "Killing"
	EventBackOff             = "BackOff"
	EventFailed              = "Failed"
	EventFailedCreateSandbox = "FailedCreatePodSandBox"
	EventFailedPreStopHook   = "FailedPreStopHook"
	EventFailedPostStartHook = "FailedPostStartHook"
	// EventLifecycleHTTPFallback: an HTTPS hook was answered in HTTP and
	// sent again over HTTP.
	EventLifecycleHTTPFallback = "LifecycleHTTPFallback"
	EventSandboxChanged        = "SandboxChanged"
	EventErrImageNeverPull     = "ErrImageNeverPull"
	// EventInspectFailed: the image reference does not parse, or the
	// runtime could not say whether the image is present.
	EventInspectFailed = "InspectFailed"
	EventFailedKillPod = "FailedKillPod"
	// EventFailedPrepareDynamicResources: the pod's resource claims could
	// not be prepared (Options.DynamicResources); its sandbox waits.
	EventFailedPrepareDynamicResources = "FailedPrepareDynamicResources"
)

// Errors a step's Err wraps, one per waiting reason, for errors.Is.
var (
	ErrCrashLoopBackOff      = errors.New(ReasonCrashLoopBackOff)
	ErrImagePull             = errors.New(ReasonErrImagePull)
	ErrImagePullBackOff      = errors.New(ReasonImagePullBackOff)
	ErrImageNeverPull        = errors.New(ReasonErrImageNeverPull)
	ErrImageInspect          = errors.New(ReasonImageInspectError)
	ErrInvalidImageName      = errors.New(ReasonInvalidImageName)
	ErrCreateContainerConfig = errors.New(ReasonCreateContainerConfigError)
	ErrCreateContainer       = errors.New(ReasonCreateContainerError)
	ErrRunContainer          = errors.New(ReasonRunContainerError)
	ErrCreatePodSandbox      = errors.New("CreatePodSandboxError")
	ErrKillContainer         = errors.New("KillContainerError")
	ErrKillPodSandbox        = errors.New("KillPodSandboxError")
	ErrRemoveContainer       = errors.New("RemoveContainerError")
	ErrInvalidPod            = errors.New("invalid pod")
)

// Step names what one step of a sync did.
type Step string

// Steps of SyncPod and KillPod.
const (
	StepCreateSandbox  Step = "CreatePodSandbox"
	StepKillSandbox    Step = "KillPodSandbox"
	StepStartContainer Step = "StartContainer"
	StepInitContainer  Step = "InitContainer"
	StepKillContainer  Step = "KillContainer"
	// StepRemoveContainer: a reset (ResetPod) killed, if it ran, and
	// removed one container instance.
	StepRemoveContainer Step = "RemoveContainer"
)

// StepResult is the outcome of one step.
type StepResult struct {
	Step Step
	// Target is the container's name, or the sandbox's ID.
	Target string
	// ContainerID is the CRI ID created or killed, when there is one.
	ContainerID string
	// Reason and Message: for a failed start the waiting reason and its
	// message; for a kill, why.
	Reason, Message string
	// Err is nil when the step succeeded; else it wraps one of the Err*
	// sentinels of this package.
	Err error
}

// Result is what SyncPod and KillPod did.
type Result struct {
	// Actions is the plan SyncPod followed (zero for KillPod).
	Actions Actions
	// Steps in the order they ran (kills run in parallel, so among kills
	// the order is not meaningful).
	Steps []StepResult
}

// SyncAgain reports whether the pod is to be synced again at once rather
// than at its next resync: a reset (ResetPod) removed its containers and
// failed nowhere, and the next sync starts the pod over, as upstream's
// kubelet requeues such a pod at once.
func (r Result) SyncAgain() bool {
	return len(r.Actions.ContainersToReset) > 0 && r.Err() == nil
}

// Err joins the errors of the failed steps; nil when all succeeded.
func (r Result) Err() error {
	var errs []error
	for _, s := range r.Steps {
		if s.Err != nil {
			errs = append(errs, s.Err)
		}
	}
	return errors.Join(errs...)
}

// CheckRunnable returns an error, wrapping ErrInvalidPod, for a pod SyncPod
// cannot run at all: nil, no UID, name or containers, or duplicate container
// names. It is not the API server's validation (package
// podspec/validation): a pod it accepts may still break the API's rules.
func CheckRunnable(pod *v1.Pod) error {
	if pod == nil {
		return fmt.Errorf("%w: nil", ErrInvalidPod)
	}
	if pod.UID == "" || pod.Name == "" {
		return fmt.Errorf("%w: %s/%s: missing name or UID", ErrInvalidPod, pod.Namespace, pod.Name)
	}
	if len(pod.Spec.Containers) == 0 {
		return fmt.Errorf("%w: %s: no containers", ErrInvalidPod, podDesc(pod))
	}
	seen := map[string]bool{}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			n := list[i].Name
			if n == "" || seen[n] {
				return fmt.Errorf("%w: %s: container name %q empty or duplicated", ErrInvalidPod, podDesc(pod), n)
			}
			seen[n] = true
		}
	}
	return nil
}

// SyncPod brings the runtime's view of the pod (status, as GetPodStatus or
// the pleg cache gives it; nil for a pod the runtime does not know) towards
// the pod's spec: it computes the plan with ComputeActions and performs it,
// returning one StepResult per step. Failures of one container do not stop
// the others (except that a failed init container stops what follows it);
// every runtime call is bounded by ctx. Before a sandbox is created, the
// pod's resource claims are prepared (Options.DynamicResources): when they
// cannot be, SyncPod records a FailedPrepareDynamicResources event
// ("Failed to prepare dynamic resources: ...") and returns with nothing
// created and no error, as upstream's does: the pod waits in
// ContainerCreating, and the next sync (the pod worker's resync) tries
// again.
func (s *Syncer) SyncPod(ctx context.Context, pod *v1.Pod, status *cri.PodStatus) Result {
	return s.syncPod(ctx, pod, status, false)
}

// ResetPod is SyncPod for a pod whose status says all its containers are
// restarting in place (the AllContainersRestarting condition, set once a
// container exits with a code one of its RestartAllContainers rules
// matches): upstream's SyncPod with restartAllContainers. It follows
// ComputeResetActions' plan: every instance of every init and app
// container, the source of the reset last, is killed without grace if it
// has not exited (a Killing event, "killing") and removed, its log file
// and log link kept, one StepRemoveContainer each; the first failure ends
// the reset, and the next tries again. Nothing is started: the caller
// syncs the pod again at once (SyncPod), which starts it over from its
// first init container in the same sandbox.
func (s *Syncer) ResetPod(ctx context.Context, pod *v1.Pod, status *cri.PodStatus) Result {
	return s.syncPod(ctx, pod, status, true)
}

// Sync is one sync of a pod as upstream's SyncPod decides which it is:
// ResetPod when restarting (its status says all its containers are
// restarting in place: status.AllContainersRestarting), else SyncPod.
// After a reset, Result.SyncAgain says whether to sync the pod again at
// once.
func (s *Syncer) Sync(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, restarting bool) Result {
	return s.syncPod(ctx, pod, status, restarting)
}

func (s *Syncer) syncPod(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, reset bool) Result {
	if err := CheckRunnable(pod); err != nil {
		return Result{Steps: []StepResult{{Step: StepCreateSandbox, Err: fmt.Errorf("sync pod: %w", err)}}}
	}
	if status == nil {
		status = &cri.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	var a Actions
	if reset {
		a = ComputeResetActions(pod, status)
	} else {
		a = ComputeActions(pod, status, s.probes)
	}
	res := Result{Actions: a}
	if a.KillPod {
		if a.CreateSandbox && len(status.Sandboxes) != 0 {
			s.event(pod, v1.EventTypeNormal, EventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
			s.log.Info("pod sandbox changed", "pod", podDesc(pod), "reason", a.SandboxReason)
		}
		kr := s.KillPod(ctx, pod, status, nil)
		res.Steps = append(res.Steps, kr.Steps...)
		if kr.Err() != nil || !a.CreateSandbox {
			return res
		}
	} else {
		for _, k := range a.ContainersToKill {
			c := findContainer(pod, k.Name)
			res.Steps = append(res.Steps, s.killContainer(ctx, pod, c, status.ContainerByID(k.ID), status.IPs, probeGracePeriod(pod, c, k.Reason), k.Message))
		}
		for _, r := range a.ContainersToReset {
			step := s.resetContainer(ctx, pod, status, r)
			res.Steps = append(res.Steps, step)
			if step.Err != nil {
				return res
			}
		}
	}

	if a.CreateSandbox {
		// The devices of the pod's resource claims come before its
		// sandbox, as upstream's. A pod whose claims cannot be prepared
		// is held: nothing is created, the sync ends without an error,
		// as upstream's does, and the next one tries again.
		if err := s.opts.DynamicResources.PrepareResources(ctx, pod); err != nil {
			s.event(pod, v1.EventTypeWarning, EventFailedPrepareDynamicResources, "Failed to prepare dynamic resources: %v", err)
			s.log.Info("Failed to prepare dynamic resources", "pod", podDesc(pod), "err", err)
			return res
		}
	}
	if !a.CreateSandbox && len(a.InitContainersToStart) == 0 && len(a.ContainersToStart) == 0 && len(a.EphemeralContainersToStart) == 0 {
		if len(a.ContainersToUpdate) != 0 || s.podCgroupStale(pod) {
			res.Steps = append(res.Steps, s.resize(ctx, pod, a.SandboxID, a.ContainersToUpdate))
		}
		return res
	}
	sandboxID, podIPs := a.SandboxID, status.IPs
	attempt := a.SandboxAttempt
	if !a.CreateSandbox {
		attempt = status.Sandbox().GetMetadata().GetAttempt()
	}
	sbConfig, err := s.config.SandboxConfig(pod, attempt)
	if err != nil {
		return s.sandboxFailed(pod, res, err)
	}
	if a.CreateSandbox {
		if err := os.MkdirAll(sbConfig.LogDirectory, 0o755); err != nil {
			return s.sandboxFailed(pod, res, err)
		}
		handler, err := s.config.RuntimeHandler(pod)
		if err != nil {
			return s.sandboxFailed(pod, res, err)
		}
		id, err := s.rt.RunPodSandbox(ctx, sbConfig, handler)
		if err != nil {
			return s.sandboxFailed(pod, res, err)
		}
		sandboxID = id
		resp, err := s.rt.PodSandboxStatus(ctx, id, false)
		if err != nil {
			return s.sandboxFailed(pod, res, fmt.Errorf("status of new sandbox %s: %w", id, err))
		}
		podIPs = cri.SandboxIPs(resp.GetStatus())
		res.Steps = append(res.Steps, StepResult{Step: StepCreateSandbox, Target: id})
	}

	sb := sandboxRef{id: sandboxID, config: sbConfig, ips: podIPs}
	// The images of the pod's image volumes are pulled once in a sync,
	// when the first container gets past its crash-loop back-off: see
	// pullImageVolumes.
	sb.imageVolumes = sync.OnceValue(func() map[string]imageVolumePull { return s.pullImageVolumes(ctx, pod, sbConfig) })
	for _, i := range a.EphemeralContainersToStart {
		c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		res.Steps = append(res.Steps, s.startContainer(ctx, pod, status, sb, &c, cri.ContainerTypeEphemeral))
	}
	for _, i := range a.InitContainersToStart {
		c := &pod.Spec.InitContainers[i]
		step := s.startContainer(ctx, pod, status, sb, c, cri.ContainerTypeInit)
		step.Step = StepInitContainer
		res.Steps = append(res.Steps, step)
		// A sidecar that cannot start (backing off, say) holds up nothing
		// after it, as upstream; a regular init container that cannot
		// start ends the sync.
		if step.Err != nil && !podspec.IsSidecar(c) {
			return res
		}
	}
	// Running containers are resized after the init containers start and
	// before the app containers do, as upstream's SyncPod orders it; so is
	// the pod's cgroup when a container restarts for its resize (its new
	// limit may exceed the pod cgroup's old one, which cgroup v1 refuses)
	// and for a pod-level resize.
	if len(a.ContainersToUpdate) != 0 || (!a.CreateSandbox && (a.restartsForResize() || s.podCgroupStale(pod))) {
		res.Steps = append(res.Steps, s.resize(ctx, pod, a.SandboxID, a.ContainersToUpdate))
	}
	for _, i := range a.ContainersToStart {
		c := &pod.Spec.Containers[i]
		res.Steps = append(res.Steps, s.startContainer(ctx, pod, status, sb, c, cri.ContainerTypeRegular))
	}
	return res
}

// resetContainer kills (without grace, as upstream: its preStop hook is
// skipped and it gets MinimumGracePeriod) and removes one instance for a
// reset. The log file stays, so that the next instance's restart count goes
// on from it, and so does its log link, as upstream's removal with
// keepLogs.
func (s *Syncer) resetContainer(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, r ContainerToReset) StepResult {
	step := StepResult{Step: StepRemoveContainer, Target: r.Name, ContainerID: r.ID}
	if r.Kill {
		zero := int64(0)
		st := status.ContainerByID(r.ID)
		if k := s.killContainer(ctx, pod, findContainer(pod, r.Name), st, status.IPs, &zero, "killing"); k.Err != nil {
			step.Message, step.Err = k.Err.Error(), k.Err
			return step
		}
	}
	if err := s.rt.RemoveContainer(ctx, r.ID); err != nil {
		step.Message = err.Error()
		step.Err = fmt.Errorf("remove container %s (%s): %w: %w", r.Name, r.ID, ErrRemoveContainer, err)
	}
	return step
}

func (s *Syncer) sandboxFailed(pod *v1.Pod, res Result, err error) Result {
	s.event(pod, v1.EventTypeWarning, EventFailedCreateSandbox, "Failed to create pod sandbox: %v", err)
	res.Steps = append(res.Steps, StepResult{Step: StepCreateSandbox, Reason: "CreatePodSandboxError",
		Message: err.Error(), Err: fmt.Errorf("create sandbox for %s: %w: %w", podDesc(pod), ErrCreatePodSandbox, err)})
	return res
}

type sandboxRef struct {
	id     string
	config *runtimeapi.PodSandboxConfig
	ips    []string
	// imageVolumes pulls the pod's image volumes (once) and gives the
	// outcome of each, by volume name; nil pulls none.
	imageVolumes func() map[string]imageVolumePull
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

func backoffKey(pod *v1.Pod, c *v1.Container) string {
	return string(pod.UID) + "/" + c.Name + "/" + containerconfig.FormatHash(containerconfig.HashContainer(c))
}

// startContainer runs one container: crash-loop backoff, image, config,
// create, start.
func (s *Syncer) startContainer(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, sb sandboxRef, c *v1.Container, ctype string) StepResult {
	step := StepResult{Step: StepStartContainer, Target: c.Name}
	fail := func(reason string, sentinel error, err error) StepResult {
		step.Reason, step.Message = reason, waitingMessage(err)
		step.Err = fmt.Errorf("start container %s of %s: %w: %w", c.Name, podDesc(pod), sentinel, err)
		s.setReason(pod.UID, c.Name, reason, step.Message)
		return step
	}
	// A failed CRI call is reported with the runtime's own message, as
	// upstream's (the gRPC status message, without method and code).
	failRuntime := func(reason string, sentinel error, err error) StepResult {
		msg := cri.RuntimeMessage(err)
		s.event(pod, v1.EventTypeWarning, EventFailed, "Error: %s", msg)
		return fail(reason, sentinel, &messageError{msg: msg, err: err})
	}
	latest := status.ContainerByName(c.Name)
	// The back-off counts from the newest instance that exited, as
	// upstream's: a container killed in this sync (liveness, startup)
	// restarts at once the first time, and after that backs off from its
	// predecessor's exit.
	if dead := lastExited(status, c.Name); dead != nil {
		finished := timeFromNanos(dead.GetFinishedAt())
		key := backoffKey(pod, c)
		s.mu.Lock()
		in, delay := s.crashBackoff.inBackoffSince(key, finished)
		if !in {
			s.crashBackoff.next(key, finished)
		}
		s.mu.Unlock()
		if in {
			s.event(pod, v1.EventTypeWarning, EventBackOff, "Back-off restarting failed container %s in pod %s", c.Name, podDesc(pod))
			return fail(ReasonCrashLoopBackOff, ErrCrashLoopBackOff, &BackoffError{
				Err:   fmt.Errorf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, podDesc(pod)),
				Until: finished.Add(delay),
			})
		}
	}
	images, pulled := s.containerImageVolumes(pod, c, sb)
	if pulled != nil {
		return fail(pulled.reason, pulled.sentinel, pulled.err)
	}
	imageRef, reason, sentinel, err := s.ensureImage(ctx, pod, c.Image, PullPolicy(c), sb.config)
	if err != nil {
		// As upstream's, every image failure also raises "Error: <reason>".
		s.event(pod, v1.EventTypeWarning, EventFailed, "Error: %s", reason)
		return fail(reason, sentinel, err)
	}
	restartCount := 0
	if latest != nil {
		n, _ := cri.RestartCountFromAnnotations(latest.GetAnnotations())
		restartCount = n + 1
	} else {
		// The runtime knows no instance, yet the container may have run
		// before (the runtime lost its state in a reboot while the logs
		// stayed): go on from its newest log file, as upstream does, so
		// that no log is overwritten.
		restartCount = restartCountFromLogs(filepath.Join(sb.config.LogDirectory, c.Name))
	}
	config, err := s.config.ContainerConfig(ctx, pod, c, ctype, restartCount, sb.ips, imageRef, images)
	if err != nil {
		s.event(pod, v1.EventTypeWarning, EventFailed, "Error: %s", waitingMessage(err))
		return fail(ReasonCreateContainerConfigError, ErrCreateContainerConfig, err)
	}
	if ctype == cri.ContainerTypeEphemeral {
		targetNamespace(pod, c.Name, status, config)
	}
	if err := os.MkdirAll(filepath.Join(sb.config.LogDirectory, c.Name), 0o755); err != nil {
		return fail(ReasonCreateContainerConfigError, ErrCreateContainerConfig, err)
	}
	id, err := s.rt.CreateContainer(ctx, sb.id, config, sb.config)
	if err != nil {
		return failRuntime(ReasonCreateContainerError, ErrCreateContainer, err)
	}
	step.ContainerID = id
	s.event(pod, v1.EventTypeNormal, EventCreated, "Created container: %s", c.Name)
	if err := s.rt.StartContainer(ctx, id); err != nil {
		return failRuntime(ReasonRunContainerError, ErrRunContainer, err)
	}
	s.event(pod, v1.EventTypeNormal, EventStarted, "Started container %s", c.Name)
	s.linkLog(pod.Name, pod.Namespace, c.Name, id, filepath.Join(sb.config.LogDirectory, config.GetLogPath()))
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		// As upstream's, the hook runs to its end (bounded only by ctx) and
		// a failure kills the container, which its restart policy may then
		// restart.
		t := hookTarget{pod: pod, container: c, name: c.Name, containerID: id, podIPs: sb.ips}
		if out, err := s.runHook(ctx, t, c.Lifecycle.PostStart, 0); err != nil {
			s.log.Info("postStart hook failed", "pod", podDesc(pod), "container", c.Name, "err", logValue(err))
			// The event leaves the hook's output out: it may carry secrets.
			s.event(pod, v1.EventTypeWarning, EventFailedPostStartHook, "PostStartHook failed")
			running := &runtimeapi.ContainerStatus{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: c.Name},
				State: runtimeapi.ContainerState_CONTAINER_RUNNING}
			if k := s.killContainer(ctx, pod, c, running, sb.ips, nil, "FailedPostStartHook"); k.Err != nil {
				s.log.Error("killing a container whose postStart hook failed", "pod", podDesc(pod), "container", c.Name, "err", k.Err)
			}
			return fail(ReasonPostStartHookError, ErrPostStartHook, &messageError{msg: hookMessage(t, c.Lifecycle.PostStart, out, err), err: err})
		}
	}
	s.clearReason(pod.UID, c.Name)
	return step
}

// PullPolicy returns the container's pull policy, defaulted as the API
// server defaults it: Always for an image tagged latest or not tagged (and
// not pinned by digest), IfNotPresent otherwise.
func PullPolicy(c *v1.Container) v1.PullPolicy {
	return pullPolicy(c.Image, c.ImagePullPolicy)
}

// ImageVolumePullPolicy returns an image volume's pull policy, defaulted
// as the API server defaults it, as a container's (PullPolicy).
func ImageVolumePullPolicy(src *v1.ImageVolumeSource) v1.PullPolicy {
	return pullPolicy(src.Reference, src.PullPolicy)
}

func pullPolicy(img string, policy v1.PullPolicy) v1.PullPolicy {
	if policy != "" {
		return policy
	}
	if strings.Contains(img, "@") {
		return v1.PullIfNotPresent
	}
	last := img[strings.LastIndex(img, "/")+1:]
	i := strings.LastIndex(last, ":")
	if i < 0 || last[i+1:] == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// ensureImage makes image (a container's, or an image volume's) present
// per policy, as upstream's EnsureImageExists: a present image is used as
// it is unless the pull records (Options.PullRecords) say the pod must
// show its credentials for it, in which case it is pulled with them (and
// a Never pod fails as if the image were absent).
func (s *Syncer) ensureImage(ctx context.Context, pod *v1.Pod, image string, policy v1.PullPolicy, sbConfig *runtimeapi.PodSandboxConfig) (string, string, error, error) {
	// An image reference that does not parse (an empty one included) is
	// InvalidImageName, before the runtime is asked anything.
	if err := cri.ValidateImageName(image); err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: %v", image, image, err)
		s.event(pod, v1.EventTypeWarning, EventInspectFailed, "%s", msg)
		return "", ReasonInvalidImageName, ErrInvalidImageName, errors.New(msg)
	}
	spec := &runtimeapi.ImageSpec{Image: image}
	// The pod's credentials for the image are looked up once, and no
	// earlier than needed (its pull secrets read, the node's plugins
	// asked), as upstream's.
	auths := sync.OnceValues(func() ([]cri.TrackedAuth, error) { return s.trackedAuths(ctx, pod, image) })
	records := s.opts.PullRecords
	// With pull policy Always the image is pulled whether present or not,
	// so the runtime is not asked first, as upstream.
	if policy != v1.PullAlways {
		resp, err := s.rt.ImageStatus(ctx, spec, false)
		if err != nil {
			msg := fmt.Sprintf("Failed to inspect image %q: %s", image, cri.RuntimeMessage(err))
			s.event(pod, v1.EventTypeWarning, EventInspectFailed, "%s", msg)
			return "", ReasonImageInspectError, ErrImageInspect, &messageError{msg: msg, err: fmt.Errorf("inspect image %q: %w", image, err)}
		}
		if img := resp.GetImage(); img != nil {
			if records == nil {
				s.event(pod, v1.EventTypeNormal, EventPulled, "Container image %q already present on machine", image)
				return img.GetId(), "", nil, nil
			}
			must, err := records.MustPull(ctx, image, img.GetId(), func() (pullrecords.PodCredentials, error) {
				a, err := auths()
				return pullrecords.PodCredentialsOf(a), err
			})
			if err != nil {
				// The pod's credentials could not be looked up (a pull
				// secret that does not parse): as a pull that cannot have
				// them.
				return "", ReasonErrImagePull, ErrImagePull, &messageError{msg: err.Error(), err: fmt.Errorf("credentials for image %q: %w", image, err)}
			}
			if !must {
				s.event(pod, v1.EventTypeNormal, EventPulled, "Container image %q already present on machine and can be accessed by the pod", image)
				return img.GetId(), "", nil, nil
			}
			// Present, but the pod must show its credentials: a pull with
			// them, or, for a Never pod, the absent image's failure, which
			// does not reveal that the image is there.
		}
	}
	if policy == v1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		s.event(pod, v1.EventTypeWarning, EventErrImageNeverPull, "%s", msg)
		return "", ReasonErrImageNeverPull, ErrImageNeverPull, errors.New(msg)
	}
	key := string(pod.UID) + "/" + image
	now := s.clock.Now()
	s.mu.Lock()
	in, last := s.pullBackoff.inBackoffSinceUpdate(key, now)
	s.mu.Unlock()
	if in {
		s.event(pod, v1.EventTypeNormal, EventBackOff, "Back-off pulling image %q", image)
		// Upstream names the failure it is backing off from. (Unlike a
		// crash loop's, this back-off's end is not handed to the pod
		// workers: upstream retries it after the generic error back-off.)
		msg := fmt.Sprintf("Back-off pulling image %q", image)
		if last != "" {
			msg += ": " + last
		}
		return "", ReasonImagePullBackOff, ErrImagePullBackOff, errors.New(msg)
	}
	// Upstream records the intent before its back-off check and drops it
	// at once when backing off; recording it here, just before the pull,
	// leaves the same records.
	if records != nil {
		if err := records.RecordIntent(image); err != nil {
			msg := fmt.Sprintf("Failed to record image pull intent for container image %q: %v", image, err)
			return "", ReasonErrImagePull, ErrImagePull, &messageError{msg: msg, err: err}
		}
	}
	s.event(pod, v1.EventTypeNormal, EventPulling, "Pulling image %q", image)
	start := s.clock.Now()
	ref, used, msg, err := s.pull(ctx, spec, sbConfig, auths)
	s.observePull(ctx, pod, spec, start, err)
	if err != nil {
		if records != nil {
			records.RecordFailed(image)
		}
		s.mu.Lock()
		s.pullBackoff.next(key, now)
		s.pullBackoff.setNote(key, ReasonErrImagePull+": "+msg)
		s.mu.Unlock()
		s.event(pod, v1.EventTypeWarning, EventFailed, "Failed to pull image %q: %s", image, msg)
		return "", ReasonErrImagePull, ErrImagePull, &messageError{msg: msg, err: fmt.Errorf("pull image %q: %w", image, err)}
	}
	if records != nil {
		records.RecordPulled(image, ref, pullrecords.CredentialsOf(used))
	}
	s.event(pod, v1.EventTypeNormal, EventPulled, "Successfully pulled image %q in %s", image, s.clock.Since(start))
	return ref, "", nil, nil
}

// observePull tells Options.Pulls of a pull that started at start and just
// ended with err, with the image's size after a success.
func (s *Syncer) observePull(ctx context.Context, pod *v1.Pod, spec *runtimeapi.ImageSpec, start time.Time, err error) {
	if s.opts.Pulls == nil {
		return
	}
	p := Pull{Image: spec.GetImage(), Start: start, Err: err}
	if err == nil {
		if resp, serr := s.rt.ImageStatus(ctx, spec, false); serr == nil {
			p.Size = resp.GetImage().GetSize()
		}
	}
	p.End = s.clock.Now()
	s.opts.Pulls.ImagePulled(pod, p)
}

// trackedAuths are the credentials to try for image pulled for pod, in
// order: those of the pod's imagePullSecrets that match it, then the
// node's own (upstream's union of the keyrings), each with where it
// comes from.
func (s *Syncer) trackedAuths(ctx context.Context, pod *v1.Pod, image string) ([]cri.TrackedAuth, error) {
	auths, err := TrackedPullAuths(s.pullSecrets(ctx, pod), image)
	if err != nil {
		return nil, err
	}
	switch creds := s.opts.Credentials.(type) {
	case nil:
	case TrackedCredentials:
		auths = append(auths, creds.TrackedCredentials(ctx, pod, image)...)
	default:
		for _, a := range creds.Credentials(ctx, pod, image) {
			auths = append(auths, cri.TrackedAuth{Auth: a})
		}
	}
	return auths, nil
}

// pull pulls an image with the credentials auths gives, each in turn until
// one works (without any when there are none), as upstream does, and
// returns the runtime's reference and the credentials that worked (nil for
// none). msg is a failure's waiting message: the runtime's own, or
// upstream's list of them when several credentials failed.
func (s *Syncer) pull(ctx context.Context, spec *runtimeapi.ImageSpec, sbConfig *runtimeapi.PodSandboxConfig, auths func() ([]cri.TrackedAuth, error)) (ref string, used *cri.TrackedAuth, msg string, err error) {
	tracked, err := auths()
	if err != nil {
		return "", nil, err.Error(), err
	}
	if len(tracked) == 0 {
		ref, err := s.rt.PullImage(ctx, spec, nil, sbConfig)
		if err != nil {
			return "", nil, cri.RuntimeMessage(err), err
		}
		return ref, nil, "", nil
	}
	var errs []error
	var msgs []string
	for i := range tracked {
		ref, err := s.rt.PullImage(ctx, spec, tracked[i].Auth, sbConfig)
		if err == nil {
			return ref, &tracked[i], "", nil
		}
		errs = append(errs, err)
		msgs = append(msgs, cri.RuntimeMessage(err))
	}
	if len(msgs) == 1 {
		return "", nil, msgs[0], errs[0]
	}
	return "", nil, "[" + strings.Join(msgs, ", ") + "]", errors.Join(errs...)
}

// lastExited returns the newest instance of the named container that has
// exited, or nil.
func lastExited(status *cri.PodStatus, name string) *runtimeapi.ContainerStatus {
	for _, c := range status.ContainersByName(name) {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			return c
		}
	}
	return nil
}

// messageError is err, with msg as the container's waiting message (the
// runtime's own words, where err has more context for logs).
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.err.Error() }
func (e *messageError) Unwrap() error { return e.err }

// waitingMessage is the waiting message for a failed start: a
// messageError's message, else the status message of a config error
// (containerconfig's, volume.SubPathError's), else the error's text.
func waitingMessage(err error) string {
	var me *messageError
	if errors.As(err, &me) {
		return me.msg
	}
	var sm interface{ StatusMessage() string }
	if errors.As(err, &sm) {
		return sm.StatusMessage()
	}
	return err.Error()
}

// BackoffError is a start that was refused because its container is in a
// crash loop (CrashLoopBackOff). Until is when the back-off ends: a pod
// worker retries the pod then rather than after its generic error back-off
// (podworkers reads BackoffExpiration), as upstream's kubelet 1.3x does.
// (An image pull back-off is a plain error: upstream retries it after the
// generic back-off.)
type BackoffError struct {
	Err   error
	Until time.Time
}

// Error returns the back-off's message.
func (e *BackoffError) Error() string { return e.Err.Error() }

// Unwrap returns the message's error.
func (e *BackoffError) Unwrap() error { return e.Err }

// BackoffExpiration is when the back-off ends.
func (e *BackoffError) BackoffExpiration() time.Time { return e.Until }

// restartCountFromLogs returns one more than the highest N of the log files
// "N.log" (or "N.log.<suffix>", rotated) in dir, or 0 when there is none
// (or no dir).
func restartCountFromLogs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	count := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		num, rest, ok := strings.Cut(e.Name(), ".log")
		if !ok || num == "" || (rest != "" && rest[0] != '.') {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 || strings.TrimLeft(num, "0123456789") != "" {
			continue
		}
		count = max(count, n+1)
	}
	return count
}
