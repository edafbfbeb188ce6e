package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// The kubelet's defaults for container log rotation
// (containerLogMaxSize, containerLogMaxFiles, containerLogMonitorInterval).
const (
	DefaultMaxSize  int64 = 10 << 20
	DefaultMaxFiles       = 5
	DefaultInterval       = 10 * time.Second
)

const (
	// RotatedTimeFormat is the suffix a rotated log gets after a '.': the
	// time of the rotation, on the rotator's clock, in its local time.
	RotatedTimeFormat = "20060102-150405"
	// compressedSuffix ends a rotated log once compressed with gzip.
	compressedSuffix = ".gz"
	// tmpSuffix ends a log being compressed; one left behind by a crash
	// is removed at the next rotation.
	tmpSuffix = ".tmp"
)

// ErrInvalidOptions is what NewRotator's errors satisfy with errors.Is.
var ErrInvalidOptions = errors.New("invalid options")

// RotatorRuntime is what a Rotator needs of a runtime: the containers,
// their log paths, and reopening a log after it was moved away.
// cri.RuntimeService and fake.Runtime implement it.
type RotatorRuntime interface {
	ContainerStatuser
	// ListContainers lists the containers that match filter.
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	// ReopenContainerLog makes the runtime write the container's log to a
	// new file at its log path.
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// RotatorOptions configure a Rotator. The zero value of each optional
// field is the kubelet's default.
type RotatorOptions struct {
	// Runtime lists the containers and reopens their logs. Required.
	Runtime RotatorRuntime
	// Clock names the rotated files and times Run; nil is the real clock.
	Clock clock.Clock
	// MaxSize is the size in bytes at which a running container's log is
	// rotated; 0 is DefaultMaxSize, negative turns rotation off (Clean
	// still works), as a negative containerLogMaxSize does.
	MaxSize int64
	// MaxFiles is how many files a container's log may have, the live one
	// included; 0 is DefaultMaxFiles; it must otherwise be at least 2.
	MaxFiles int
	// Interval is how often Run looks at the logs; 0 is DefaultInterval.
	Interval time.Duration
	// Logger receives what Run could not rotate; nil discards.
	Logger *slog.Logger
}

// Rotator rotates the logs of running containers as the kubelet's
// container log manager does, and removes the logs of containers being
// removed. Its methods are safe for concurrent use; rotations and cleanups
// run one at a time.
type Rotator struct {
	rt       RotatorRuntime
	clock    clock.Clock
	maxSize  int64
	maxFiles int
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	started atomic.Bool
}

// NewRotator returns a Rotator; it starts nothing (see Run). A missing
// runtime or a MaxFiles of 1 or less is an error wrapping
// ErrInvalidOptions.
func NewRotator(o RotatorOptions) (*Rotator, error) {
	if o.Runtime == nil {
		return nil, fmt.Errorf("logs: rotator: missing runtime: %w", ErrInvalidOptions)
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxFiles <= 1 {
		return nil, fmt.Errorf("logs: rotator: invalid MaxFiles %d, must be > 1: %w", o.MaxFiles, ErrInvalidOptions)
	}
	if o.MaxSize == 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.Interval < 0 {
		return nil, fmt.Errorf("logs: rotator: negative Interval %s: %w", o.Interval, ErrInvalidOptions)
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Rotator{rt: o.Runtime, clock: o.Clock, maxSize: o.MaxSize, maxFiles: o.MaxFiles, interval: o.Interval, log: o.Logger}, nil
}

// Run rotates the logs at once and then every Interval until ctx ends; a
// failed round is logged and the next one tries again. It returns nil
// when ctx ends, and an error if called twice.
func (r *Rotator) Run(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("logs: rotator: Run called more than once")
	}
	for {
		if err := r.Rotate(ctx); err != nil && ctx.Err() == nil {
			r.log.Error("Failed to rotate container logs", "err", err)
		}
		t := r.clock.NewTimer(r.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Rotate runs one round: every running container whose live log has
// reached MaxSize gets it rotated (see RotateContainer). The error joins
// those of the containers that failed, each naming its container; the
// others are rotated all the same.
func (r *Rotator) Rotate(ctx context.Context) error {
	if r.maxSize < 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return fmt.Errorf("failed to list containers: %w", err)
	}
	var errs []error
	for _, c := range cs {
		// A container that does not run writes nothing more: an empty
		// live log would be all rotation gives it.
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if err := r.rotateContainer(ctx, c.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("container %q: %w", c.GetId(), err))
		}
	}
	return errors.Join(errs...)
}

// RotateContainer rotates one container's log if it has reached MaxSize:
// it removes what an interrupted rotation left behind (.tmp files, files
// already compressed), removes the oldest rotated files so that MaxFiles
// are left after this rotation, compresses the rotated files not yet
// compressed, renames the live log to "<log>.<time>" (RotatedTimeFormat)
// and asks the runtime to reopen it, renaming it back if the runtime
// cannot. A live log that is missing is reopened first. A container with
// no log path has nothing to rotate.
func (r *Rotator) RotateContainer(ctx context.Context, containerID string) error {
	if r.maxSize < 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rotateContainer(ctx, containerID)
}

func (r *Rotator) rotateContainer(ctx context.Context, id string) error {
	path, err := r.logPath(ctx, id)
	if err != nil || path == "" {
		return err
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := r.rt.ReopenContainerLog(ctx, id); err != nil {
			return fmt.Errorf("container log %q doesn't exist, reopen container log failed: %w", path, err)
		}
		info, err = os.Stat(path)
	}
	if err != nil {
		return fmt.Errorf("failed to stat container log %q: %w", path, err)
	}
	if info.Size() < r.maxSize {
		return nil
	}
	return r.rotateLog(ctx, id, path)
}

// logPath returns the container's log path from the runtime: "" when it
// has none, an error when it is not an absolute, clean path (rotation
// renames and removes files next to it).
func (r *Rotator) logPath(ctx context.Context, id string) (string, error) {
	resp, err := r.rt.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", fmt.Errorf("failed to get container status %q: %w", id, err)
	}
	if resp.GetStatus() == nil {
		return "", fmt.Errorf("container status is nil for %q: %w", id, ErrContainerStatusNil)
	}
	path := resp.GetStatus().GetLogPath()
	if path != "" && (!filepath.IsAbs(path) || filepath.Clean(path) != path) {
		return "", fmt.Errorf("container %q has log path %q, which is not an absolute clean path", id, path)
	}
	return path, nil
}

func (r *Rotator) rotateLog(ctx context.Context, id, path string) error {
	rotated := path + "." + r.clock.Now().Format(RotatedTimeFormat)
	for _, p := range []string{rotated, rotated + compressedSuffix} {
		// Two rotations within a second would overwrite the first.
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("failed to rotate log %q: %q already exists", path, p)
		}
	}
	logs, err := rotatedFiles(path)
	if err != nil {
		return err
	}
	inUse, unused := splitUnused(logs)
	for _, l := range unused {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("failed to remove unused log %q: %w", l, err)
		}
	}
	// Keep MaxFiles-2 rotated files: with the one rotated now and the new
	// live log, that makes MaxFiles. The oldest go first, so a reader
	// going through them in order loses the least.
	keep := max(r.maxFiles-2, 0)
	excess := max(len(inUse)-keep, 0)
	for _, l := range inUse[:excess] {
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("failed to remove old log %q: %w", l, err)
		}
	}
	for _, l := range inUse[excess:] {
		if strings.HasSuffix(l, compressedSuffix) {
			continue
		}
		if err := compress(l); err != nil {
			return fmt.Errorf("failed to compress log %q: %w", l, err)
		}
	}
	// The newest rotated file stays uncompressed: the runtime may write
	// to it until it has reopened the log, and log shippers finish it.
	if err := os.Rename(path, rotated); err != nil {
		return fmt.Errorf("failed to rotate log %q to %q: %w", path, rotated, err)
	}
	if err := r.rt.ReopenContainerLog(ctx, id); err != nil {
		// Put it back so that the next round tries again.
		if rerr := os.Rename(rotated, path); rerr != nil {
			r.log.Error("Failed to rename rotated log back; the runtime may have lost its log file",
				"rotatedLog", rotated, "log", path, "containerID", id, "err", rerr)
		}
		return fmt.Errorf("failed to reopen container log %q: %w", id, err)
	}
	return nil
}

// rotatedFiles returns the files next to the log at path whose names are
// its name, a '.', and more, sorted (oldest first, by RotatedTimeFormat).
// It reads the directory rather than globbing, so that a path with glob
// characters matches only itself.
func rotatedFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to list the logs of %q: %w", path, err)
	}
	var out []string
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, base+".") && !e.IsDir() {
			out = append(out, filepath.Join(dir, name))
		}
	}
	slices.Sort(out)
	return out, nil
}

// splitUnused splits rotated files into those in use and those that an
// interrupted rotation left: temporary files, and files whose compressed
// copy exists.
func splitUnused(logs []string) (inUse, unused []string) {
	for _, l := range logs {
		switch {
		case strings.HasSuffix(l, tmpSuffix):
			unused = append(unused, l)
		case !strings.HasSuffix(l, compressedSuffix) && slices.Contains(logs, l+compressedSuffix):
			unused = append(unused, l)
		default:
			inUse = append(inUse, l)
		}
	}
	return inUse, unused
}

// compress writes l compressed with gzip to l.tmp, renames that to l.gz
// and removes l.
func compress(l string) (err error) {
	src, err := os.Open(l)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	tmp := l + tmpSuffix
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return fmt.Errorf("failed to create temporary log %q: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			_ = dst.Close()
			_ = os.Remove(tmp)
		}
	}()
	zw := gzip.NewWriter(dst)
	if _, err := io.Copy(zw, src); err != nil {
		return fmt.Errorf("failed to compress %q to %q: %w", l, tmp, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("failed to compress %q to %q: %w", l, tmp, err)
	}
	if err := dst.Close(); err != nil {
		return fmt.Errorf("failed to compress %q to %q: %w", l, tmp, err)
	}
	if err := os.Rename(tmp, l+compressedSuffix); err != nil {
		return fmt.Errorf("failed to rename %q to %q: %w", tmp, l+compressedSuffix, err)
	}
	if err := os.Remove(l); err != nil {
		return fmt.Errorf("failed to remove log %q after compress: %w", l, err)
	}
	return nil
}

// Clean removes every log file of a container, the live one and the
// rotated ones (all the files whose names start with the live log's), as
// the kubelet does before it removes a container. It needs the container's
// status, so it is called while the runtime still has the container.
func (r *Rotator) Clean(ctx context.Context, containerID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	path, err := r.logPath(ctx, containerID)
	if err != nil || path == "" {
		return err
	}
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to list all log files of %q: %w", path, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), base) {
			continue
		}
		l := filepath.Join(dir, e.Name())
		if err := os.Remove(l); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("failed to remove container %q log %q: %w", containerID, l, err)
		}
	}
	return nil
}

// AllLogs returns the files of the container log at path, oldest first:
// the rotated ones in use (compressed or not) and path itself last, as
// upstream's GetAllLogs, for reading a log's history or measuring its
// disk use.
func AllLogs(path string) ([]string, error) {
	logs, err := rotatedFiles(path)
	if err != nil {
		return nil, err
	}
	inUse, _ := splitUnused(logs)
	return append(inUse, path), nil
}
