package fake

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Exit codes and reasons as containerd reports them.
const (
	exitStartError = 128
	exitKilled     = 137 // 128 + SIGKILL
	exitTerminated = 143 // 128 + SIGTERM

	reasonCompleted  = "Completed"
	reasonError      = "Error"
	reasonOOMKilled  = "OOMKilled"
	reasonStartError = "StartError"
)

type container struct {
	membership
	id         string
	name       string // the reserved name, as containerd builds it
	sandbox    *sandbox
	config     *runtimeapi.ContainerConfig
	imageID    string
	imageNames []string // normalized references of the image at creation
	logPath    string   // "" when the sandbox has no log directory
	state      runtimeapi.ContainerState
	createdAt  int64
	startedAt  int64
	finishedAt int64
	exitCode   int32
	reason     string
	message    string
	resources  *runtimeapi.ContainerResources
	behavior   Behavior
	timer      clock.Timer           // the scripted exit, while running
	logTimers  []clock.Timer         // periodic log writes, while running
	logFile    *os.File              // kept open by a periodic logger
	exited     chan struct{}         // closed when it stops running
	listed     *runtimeapi.Container // the list entry, shared; see listEntry
	stdio      *stdio                // its streams as attach sees them, from its start
	files      *files                // its own files (see files.go); nil until used
	partial    [2][]byte             // output of its process not yet logged (no newline yet)
}

func (c *container) objectID() string { return c.id }

// argv is the container's command followed by its args.
func (c *container) argv() []string {
	return slices.Concat(c.config.GetCommand(), c.config.GetArgs())
}

func containerMetadata(md *runtimeapi.ContainerMetadata) *runtimeapi.ContainerMetadata {
	if md == nil {
		return nil
	}
	return &runtimeapi.ContainerMetadata{Name: md.Name, Attempt: md.Attempt}
}

// listEntry returns c as ListContainers lists it. The entry is built once
// and shared by every list until the container's state changes (the only
// field of the entry that ever does), so that listing a large node does not
// copy it on every call; callers treat list results as read-only.
func (c *container) listEntry() *runtimeapi.Container {
	if c.listed == nil || c.listed.State != c.state {
		c.listed = c.toContainer()
	}
	return c.listed
}

func (c *container) toContainer() *runtimeapi.Container {
	return &runtimeapi.Container{
		Id:           c.id,
		PodSandboxId: c.sandbox.id,
		Metadata:     containerMetadata(c.config.GetMetadata()),
		Image:        proto.CloneOf(c.config.GetImage()),
		ImageRef:     c.imageID,
		ImageId:      c.imageID,
		State:        c.state,
		CreatedAt:    c.createdAt,
		Labels:       maps.Clone(c.config.GetLabels()),
		Annotations:  maps.Clone(c.config.GetAnnotations()),
	}
}

// containerStatusLocked builds c's status. As containerd, Image is the
// image's first repo tag and ImageRef its first repo digest while the image
// is present, and the config's image and the image ID otherwise.
func (r *Runtime) containerStatusLocked(c *container) *runtimeapi.ContainerStatus {
	spec, ref := proto.CloneOf(c.config.GetImage()), c.imageID
	if img := r.images[c.imageID]; img != nil {
		if len(img.RepoTags) > 0 {
			if spec == nil {
				spec = &runtimeapi.ImageSpec{}
			}
			spec.Image = img.RepoTags[0]
		}
		if len(img.RepoDigests) > 0 {
			ref = img.RepoDigests[0]
		}
	}
	st := &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    containerMetadata(c.config.GetMetadata()),
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       spec,
		ImageRef:    ref,
		ImageId:     c.imageID,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      maps.Clone(c.config.GetLabels()),
		Annotations: maps.Clone(c.config.GetAnnotations()),
		LogPath:     c.logPath,
		Resources:   proto.CloneOf(c.resources),
	}
	for _, m := range c.config.GetMounts() {
		st.Mounts = append(st.Mounts, proto.CloneOf(m))
	}
	return st
}

// containerLogPath joins the sandbox's log directory and the container's log
// path, refusing a path that is absolute or would leave the directory.
func containerLogPath(dir, rel string) (string, error) {
	if dir == "" || rel == "" {
		return "", nil
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("container log path %q must be relative and stay inside the log directory %q: %w", rel, dir, cri.ErrInvalidArgument)
	}
	return filepath.Join(dir, rel), nil
}

// CreateContainer implements cri.ContainerManager. As in containerd, the
// sandbox must exist (ErrNotFound) and be ready (ErrFailedPrecondition), the
// image must be present, pulled or preloaded (ErrNotFound), and the name
// built from the container's name and attempt and the sandbox's name,
// namespace and uid must not be reserved by another container
// (ErrAlreadyExists). The log goes to LogDirectory/LogPath when both are
// set (LogDirectory from sandboxConfig, or from the sandbox's own config
// when sandboxConfig has none); a LogPath that is absolute or leaves the
// directory is ErrInvalidArgument, and so is a Linux security context with
// RunAsGroup but neither RunAsUser nor RunAsUsername (containerd refuses a
// group without a user). A mount of an image (an image volume: Mount.Image
// set) needs, as containerd 2.1's, no host path and read-only
// (ErrInvalidArgument) and its image present (ErrNotFound); it is kept in
// the container's status. Event: CREATED.
func (r *Runtime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if err := r.enter(ctx, CreateContainer, &runtimeapi.CreateContainerRequest{PodSandboxId: podSandboxID, Config: config, SandboxConfig: sandboxConfig}); err != nil {
		return "", err
	}
	md := config.GetMetadata()
	if md.GetName() == "" {
		return "", fmt.Errorf("create container: metadata needs a name: %w", cri.ErrInvalidArgument)
	}
	imageRef := config.GetImage().GetImage()
	if imageRef == "" {
		return "", fmt.Errorf("create container %q: no image: %w", md.Name, cri.ErrInvalidArgument)
	}
	if sc := config.GetLinux().GetSecurityContext(); sc.GetRunAsGroup() != nil && sc.GetRunAsUser() == nil && sc.GetRunAsUsername() == "" {
		return "", fmt.Errorf("create container %q: user group %d is specified without user: %w", md.Name, sc.GetRunAsGroup().GetValue(), cri.ErrInvalidArgument)
	}
	config = proto.CloneOf(config)
	now := r.now()
	r.mu.Lock()
	defer r.unlock()
	s, err := r.sandboxes.resolve(podSandboxID, "pod sandbox")
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", md.Name, err)
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return "", fmt.Errorf("create container %q: pod sandbox %q is not ready: %w", md.Name, s.id, cri.ErrFailedPrecondition)
	}
	logDir := sandboxConfig.GetLogDirectory()
	if logDir == "" {
		logDir = s.config.GetLogDirectory()
	}
	logPath, err := containerLogPath(logDir, config.GetLogPath())
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", md.Name, err)
	}
	img := r.findImageLocked(imageRef)
	if img == nil {
		return "", fmt.Errorf("create container %q: image %q not found (pull it first): %w", md.Name, imageRef, cri.ErrNotFound)
	}
	if err := r.checkImageMountsLocked(config.GetMounts()); err != nil {
		return "", fmt.Errorf("create container %q: %w", md.Name, err)
	}
	smd := s.config.GetMetadata()
	name := fmt.Sprintf("%s_%s_%s_%s_%d", md.Name, smd.GetName(), smd.GetNamespace(), smd.GetUid(), md.Attempt)
	if other, ok := r.containerNames[name]; ok {
		return "", fmt.Errorf("failed to reserve container name %q: name %q is reserved for %q: %w", name, name, other, cri.ErrAlreadyExists)
	}
	c := &container{
		name:       name,
		sandbox:    s,
		config:     config,
		imageID:    img.Id,
		imageNames: slices.Concat([]string{NormalizeImage(imageRef)}, img.RepoTags, img.RepoDigests),
		logPath:    logPath,
		state:      runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt:  now,
	}
	if lin := config.GetLinux().GetResources(); lin != nil {
		c.resources = &runtimeapi.ContainerResources{Linux: proto.CloneOf(lin)}
	}
	c.id = r.newIDLocked("container", name)
	r.containers.add(c)
	r.containerNames[name] = c.id
	s.containers = append(s.containers, c)
	r.emitLocked(now, c.id, s, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	r.log.Debug("container created", "id", c.id, "name", md.Name, "sandbox", s.id)
	return c.id, nil
}

// StartContainer implements cri.ContainerManager. A container that is not
// CREATED is ErrFailedPrecondition. What the container does then is scripted
// by the first matching Rule (see Behavior). When it starts, its log file is
// created and the behaviour's lines are written to it (and again every
// Behavior.LogEvery, if it logs periodically). A start that fails
// (Behavior FailStart, a sandbox that is not ready, a log that cannot be
// written) leaves the container EXITED with exit code 128, reason StartError
// and the error as message, and sends no event, as containerd. Event:
// STARTED, and STOPPED when it exits.
func (r *Runtime) StartContainer(ctx context.Context, containerID string) error {
	if err := r.enter(ctx, StartContainer, &runtimeapi.StartContainerRequest{ContainerId: containerID}); err != nil {
		return err
	}
	now := r.now()
	r.mu.Lock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		r.unlock()
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		r.unlock()
		return fmt.Errorf("start container %q: container is in %s state: %w", c.id, c.state, cri.ErrFailedPrecondition)
	}
	b := r.behaviorLocked(c)
	c.behavior = b
	if c.sandbox.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		err := fmt.Errorf("start container %q: sandbox container %q is not running: %w", c.id, c.sandbox.id, cri.ErrFailedPrecondition)
		r.startFailedLocked(now, c, err)
		r.unlock()
		return err
	}
	if b.Outcome == FailStart {
		msg := b.StartError
		if msg == "" {
			exe := "<none>"
			if argv := c.argv(); len(argv) > 0 {
				exe = argv[0]
			}
			msg = fmt.Sprintf("failed to create containerd task: OCI runtime create failed: exec: %q: executable file not found in $PATH", exe)
		}
		err := fmt.Errorf("start container %q: %s", c.id, msg)
		r.startFailedLocked(now, c, err)
		r.unlock()
		return err
	}
	if err := r.startLogLocked(now, c, b); err != nil {
		err = fmt.Errorf("start container %q: failed to create container loggers: %w", c.id, err)
		r.startFailedLocked(now, c, err)
		r.unlock()
		return err
	}
	c.state, c.startedAt, c.exited = runtimeapi.ContainerState_CONTAINER_RUNNING, now, make(chan struct{})
	c.stdio = newStdio()
	r.emitLocked(now, c.id, c.sandbox, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	r.log.Debug("container started", "id", c.id)
	var code int32
	var reason string
	exits := true
	switch b.Outcome {
	case Exit:
		code, reason = b.ExitCode, ""
	case OOMKill:
		code, reason = exitKilled, reasonOOMKilled
	default:
		exits = false
	}
	if exits && b.RunFor <= 0 {
		r.exitLocked(now, c, code, reason, "")
		r.unlock()
		return nil
	}
	repeats := c.logFile != nil
	r.unlock()
	if repeats {
		until := int64(0) // the container's scripted exit; 0: none
		if exits {
			until = now + int64(b.RunFor)
		}
		r.scheduleLogs(c, now, until, b)
	}
	if exits {
		r.scheduleExit(c, now+int64(b.RunFor), code, reason)
	}
	return nil
}

// startLogLocked creates c's log file and writes b's lines to it. A
// container that logs periodically keeps the file open (see
// Behavior.LogEvery).
func (r *Runtime) startLogLocked(now int64, c *container, b Behavior) error {
	if !b.repeatsLog() || c.logPath == "" {
		return writeLog(c.logPath, time.Unix(0, now), b.Stdout, b.Stderr)
	}
	f, err := openLog(c.logPath)
	if err != nil {
		return err
	}
	if err := appendLog(f, time.Unix(0, now), b.Stdout, b.Stderr); err != nil {
		_ = f.Close()
		return err
	}
	c.logFile = f
	return nil
}

// scheduleLogs makes c write b's lines again every b.LogEvery after start
// (nanoseconds), b.LogRepeat times, while it runs: strictly before until,
// its scripted exit, when that is not 0 (a FakeClock step past both runs
// the timers in the order they were made, not in time order). It is called
// without the lock.
func (r *Runtime) scheduleLogs(c *container, start, until int64, b Behavior) {
	now := r.now()
	timers := make([]clock.Timer, 0, b.LogRepeat)
	for k := 1; k <= b.LogRepeat; k++ {
		at := start + int64(k)*int64(b.LogEvery)
		if until != 0 && at >= until {
			break
		}
		timers = append(timers, r.clock.AfterFunc(max(time.Duration(at-now), 0), func() {
			// Runs inside FakeClock.Step, under the clock's lock: no clock
			// call (see scheduleExit).
			r.mu.Lock()
			defer r.mu.Unlock()
			if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING || c.logFile == nil {
				return
			}
			if err := appendLog(c.logFile, time.Unix(0, at), b.Stdout, b.Stderr); err != nil {
				r.log.Debug("container log write failed", "id", c.id, "err", err)
			}
			c.stdio.broadcastLines(c.config.GetTty(), b.Stdout, b.Stderr)
		}))
	}
	r.mu.Lock()
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !r.closed {
		c.logTimers = timers
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	for _, t := range timers {
		t.Stop()
	}
}

// stopLoggingLocked stops c's periodic log writes and closes its log file.
func (r *Runtime) stopLoggingLocked(c *container) {
	r.staleTimers = append(r.staleTimers, c.logTimers...)
	c.logTimers = nil
	if c.logFile != nil {
		if err := c.logFile.Close(); err != nil {
			r.log.Debug("container log close failed", "id", c.id, "err", err)
		}
		c.logFile = nil
	}
}

// startFailedLocked records a failed start as containerd does.
func (r *Runtime) startFailedLocked(now int64, c *container, err error) {
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt, c.exitCode, c.reason, c.message = now, exitStartError, reasonStartError, err.Error()
	r.log.Debug("container failed to start", "id", c.id, "err", err)
}

// scheduleExit makes c exit at the clock time at (nanoseconds), unless it
// stops before. It is called without the lock.
func (r *Runtime) scheduleExit(c *container, at int64, code int32, reason string) {
	d := time.Duration(at - r.now())
	t := r.clock.AfterFunc(max(d, 0), func() {
		// This runs inside FakeClock.Step, under the clock's lock: no clock
		// call, and mu is released with Unlock (see unlock).
		r.mu.Lock()
		defer r.mu.Unlock()
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			c.timer = nil
			r.exitLocked(at, c, code, reason, "")
		}
	})
	r.mu.Lock()
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !r.closed {
		c.timer = t
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	t.Stop()
}

// exitLocked moves a running container to EXITED. An empty reason is
// containerd's for the code: Completed for 0, Error otherwise.
func (r *Runtime) exitLocked(now int64, c *container, code int32, reason, message string) {
	if c.timer != nil {
		r.staleTimers = append(r.staleTimers, c.timer)
		c.timer = nil
	}
	r.flushOutputLocked(now, c)
	r.stopLoggingLocked(c)
	c.stdio.close(nil)
	if reason == "" {
		reason = reasonError
		if code == 0 {
			reason = reasonCompleted
		}
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt, c.exitCode, c.reason, c.message = now, code, reason, message
	close(c.exited)
	r.emitLocked(now, c.id, c.sandbox, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
	r.log.Debug("container exited", "id", c.id, "exitCode", code, "reason", reason)
}

// StopContainer implements cri.ContainerManager. The container answers
// SIGTERM as its Behavior.OnSIGTERM says: by default it dies at once with
// exit code 143; IgnoreSIGTERM makes the call wait timeout seconds on the
// runtime's clock and then kill it (137); ExitOnSIGTERM makes it exit 0
// after Behavior.ShutdownTime, or be killed at the timeout if that is
// shorter. timeout 0 kills at once (137). The wait ends early when the
// container exits by itself; when ctx ends first the call fails with ctx's
// error and the container keeps running. Stopping a container that is not
// running, or one that does not exist, is not an error: the CRI asks
// StopContainer to be idempotent, and containerd 1.7 and later return
// success for a missing container (1.6 returned NotFound).
func (r *Runtime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	if err := r.enter(ctx, StopContainer, &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: timeout}); err != nil {
		return err
	}
	now := r.now()
	r.mu.Lock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		r.unlock()
		return ignoreNotFound(err)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.unlock()
		return nil
	}
	grace := time.Duration(timeout) * time.Second
	var wait time.Duration
	code := int32(exitKilled)
	switch b := c.behavior; {
	case timeout <= 0:
	case b.OnSIGTERM == IgnoreSIGTERM:
		wait = grace
	case b.OnSIGTERM == ExitOnSIGTERM && b.ShutdownTime <= grace:
		wait, code = b.ShutdownTime, 0
	case b.OnSIGTERM == ExitOnSIGTERM:
		wait = grace
	default:
		code = exitTerminated
	}
	if wait <= 0 {
		r.exitLocked(now, c, code, "", "")
		r.unlock()
		return nil
	}
	exited := c.exited
	r.unlock()
	r.log.Debug("container stopping", "id", c.id, "wait", wait)
	if err := r.wait(ctx, wait, exited); err != nil {
		return fmt.Errorf("stop container %q: %w", c.id, err)
	}
	r.mu.Lock()
	defer r.unlock()
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exitLocked(now+int64(wait), c, code, "", "")
	}
	return nil
}

// RemoveContainer implements cri.ContainerManager. A running container is
// killed first (137), as containerd does. Removing a missing container is
// not an error. Event: DELETED (with the sandbox's remaining containers).
func (r *Runtime) RemoveContainer(ctx context.Context, containerID string) error {
	if err := r.enter(ctx, RemoveContainer, &runtimeapi.RemoveContainerRequest{ContainerId: containerID}); err != nil {
		return err
	}
	now := r.now()
	r.mu.Lock()
	defer r.unlock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return ignoreNotFound(err)
	}
	r.removeContainerLocked(now, c)
	return nil
}

func (r *Runtime) removeContainerLocked(now int64, c *container) {
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.exitLocked(now, c, exitKilled, "", "")
	}
	r.containers.remove(c)
	delete(r.containerNames, c.name)
	delete(r.stats, c.id)
	s := c.sandbox
	s.containers = slices.DeleteFunc(s.containers, func(x *container) bool { return x == c })
	r.emitLocked(now, c.id, s, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	r.log.Debug("container removed", "id", c.id)
}

// ListContainers implements cri.ContainerManager. The filter works as
// containerd's: an ID and a sandbox ID (each exact, or a prefix only one
// object has), a state, labels that must all be present with equal values.
// Containers are listed in creation order (containerd's order is
// unspecified).
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if err := r.enter(ctx, ListContainers, &runtimeapi.ListContainersRequest{Filter: filter}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.Container
	if filter.GetId() == "" && filter.GetPodSandboxId() == "" {
		out = make([]*runtimeapi.Container, 0, r.containers.len())
	}
	r.eachContainerLocked(filter.GetId(), filter.GetPodSandboxId(), filter.GetLabelSelector(), func(c *container) {
		if filter.GetState() == nil || filter.GetState().GetState() == c.state {
			out = append(out, c.listEntry())
		}
	})
	if out == nil {
		out = []*runtimeapi.Container{}
	}
	return out, nil
}

// eachContainerLocked calls f for the containers matching a container ID, a
// sandbox ID (each exact or a unique prefix; "" matches all) and a label
// selector, in creation order, without scanning every container when an ID
// narrows the search.
func (r *Runtime) eachContainerLocked(id, sandboxID string, selector map[string]string, f func(*container)) {
	match := f
	if len(selector) > 0 {
		match = func(c *container) {
			if matchLabels(c.config.GetLabels(), selector) {
				f(c)
			}
		}
	}
	var s *sandbox
	if sandboxID != "" {
		var err error
		if s, err = r.sandboxes.resolve(sandboxID, "pod sandbox"); err != nil {
			return
		}
	}
	switch {
	case id != "":
		c, err := r.containers.resolve(id, "container")
		if err == nil && (s == nil || c.sandbox == s) {
			match(c)
		}
	case s != nil:
		for _, c := range s.containers {
			match(c)
		}
	default:
		r.containers.each(match)
	}
}

// ContainerStatus implements cri.ContainerManager. A missing container is
// ErrNotFound. verbose adds an "info" entry holding the container's config
// as JSON.
func (r *Runtime) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.enter(ctx, ContainerStatus, &runtimeapi.ContainerStatusRequest{ContainerId: containerID, Verbose: verbose}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: r.containerStatusLocked(c)}
	if verbose {
		resp.Info = map[string]string{"info": info(c.config)}
	}
	return resp, nil
}

// UpdateContainerResources implements cri.ContainerManager: the Linux or
// Windows part that is set replaces the container's, and shows in its
// status. A container that is neither created nor running is
// ErrFailedPrecondition, as containerd.
func (r *Runtime) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	if err := r.enter(ctx, UpdateContainerResources, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: containerID, Linux: resources.GetLinux(), Windows: resources.GetWindows()}); err != nil {
		return err
	}
	resources = proto.CloneOf(resources)
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED && c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("update container %q resources: container is in %s state: %w", c.id, c.state, cri.ErrFailedPrecondition)
	}
	if c.resources == nil {
		c.resources = &runtimeapi.ContainerResources{}
	}
	if l := resources.GetLinux(); l != nil {
		c.resources.Linux = mergeLinuxResources(c.resources.Linux, l)
	}
	if resources.GetWindows() != nil {
		c.resources.Windows = resources.Windows
	}
	return nil
}

// ReopenContainerLog implements cri.ContainerManager: for a running
// container it creates the log file anew if it was moved away (log
// rotation does that), and a container that logs periodically (see
// Behavior.LogEvery) writes to the new file from then on instead of the
// one it had open. A container that is not running is
// ErrFailedPrecondition, as containerd.
func (r *Runtime) ReopenContainerLog(ctx context.Context, containerID string) error {
	if err := r.enter(ctx, ReopenContainerLog, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("reopen log of container %q: container is not running: %w", c.id, cri.ErrFailedPrecondition)
	}
	if c.logFile == nil {
		if err := writeLog(c.logPath, time.Time{}, nil, nil); err != nil {
			return fmt.Errorf("reopen log of container %q: %w", c.id, err)
		}
		return nil
	}
	f, err := openLog(c.logPath)
	if err != nil {
		return fmt.Errorf("reopen log of container %q: %w", c.id, err)
	}
	old := c.logFile
	c.logFile = f
	if err := old.Close(); err != nil {
		r.log.Debug("container log close failed", "id", c.id, "err", err)
	}
	return nil
}

// ExitContainer makes a running container exit now, as if its process had
// ended by itself (a crash, say), with exitCode and reason; an empty reason
// is containerd's for the code (Completed for 0, Error otherwise). It is not
// a CRI call: it is not recorded and no fault applies. A missing container
// is ErrNotFound, one that is not running ErrFailedPrecondition.
func (r *Runtime) ExitContainer(containerID string, exitCode int32, reason string) error {
	now := r.now()
	r.mu.Lock()
	defer r.unlock()
	c, err := r.containers.resolve(containerID, "container")
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("exit container %q: container is in %s state: %w", c.id, c.state, cri.ErrFailedPrecondition)
	}
	r.exitLocked(now, c, exitCode, reason, "")
	return nil
}

// checkImageMountsLocked checks the mounts of images (image volumes) as
// containerd checks them before it mounts one: no host path, read-only, an
// image that is present.
func (r *Runtime) checkImageMountsLocked(mounts []*runtimeapi.Mount) error {
	for _, m := range mounts {
		spec := m.GetImage()
		if spec == nil {
			continue
		}
		switch {
		case m.GetHostPath() != "":
			return fmt.Errorf("image mount at %q: hostpath must be empty while mount image: %w", m.GetContainerPath(), cri.ErrInvalidArgument)
		case !m.GetReadonly():
			return fmt.Errorf("image mount at %q: readonly must be true while mount image: %w", m.GetContainerPath(), cri.ErrInvalidArgument)
		case spec.GetImage() == "":
			return fmt.Errorf("image mount at %q: image not specified: %w", m.GetContainerPath(), cri.ErrInvalidArgument)
		case r.findImageLocked(spec.GetImage()) == nil:
			return fmt.Errorf("failed to resolve image %q of the mount at %q: %w", spec.GetImage(), m.GetContainerPath(), cri.ErrNotFound)
		}
	}
	return nil
}

// mergeLinuxResources applies an update as containerd applies it to a
// container's spec: every field the update sets (non-zero) replaces the
// old one, the others stay, so that an update of the cpuset alone (a CPU
// manager's) keeps the container's limits.
func mergeLinuxResources(old, upd *runtimeapi.LinuxContainerResources) *runtimeapi.LinuxContainerResources {
	if old == nil {
		return upd
	}
	out := proto.CloneOf(old)
	if v := upd.GetCpuPeriod(); v != 0 {
		out.CpuPeriod = v
	}
	if v := upd.GetCpuQuota(); v != 0 {
		out.CpuQuota = v
	}
	if v := upd.GetCpuShares(); v != 0 {
		out.CpuShares = v
	}
	if v := upd.GetCpusetCpus(); v != "" {
		out.CpusetCpus = v
	}
	if v := upd.GetCpusetMems(); v != "" {
		out.CpusetMems = v
	}
	if v := upd.GetMemoryLimitInBytes(); v != 0 {
		out.MemoryLimitInBytes = v
	}
	if v := upd.GetMemorySwapLimitInBytes(); v != 0 {
		out.MemorySwapLimitInBytes = v
	}
	if v := upd.GetOomScoreAdj(); v != 0 {
		out.OomScoreAdj = v
	}
	if v := upd.GetHugepageLimits(); len(v) > 0 {
		out.HugepageLimits = v
	}
	for k, v := range upd.GetUnified() {
		if out.Unified == nil {
			out.Unified = map[string]string{}
		}
		out.Unified[k] = v
	}
	return out
}
