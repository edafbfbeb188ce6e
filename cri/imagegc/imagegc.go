package imagegc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Upstream's defaults (KubeletConfiguration imageGCHighThresholdPercent,
// imageGCLowThresholdPercent, imageMinimumGCAge, imageMaximumGCAge, and the
// kubelet's ImageGCPeriod).
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	DefaultPeriod               = 5 * time.Minute
)

// Event reasons, as upstream's.
const (
	// ReasonFreeDiskSpaceFailed: a pass could not bring the image
	// filesystem below the low threshold.
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	// ReasonInvalidDiskCapacity: the image filesystem reports no capacity.
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
	// ReasonImageGCFailed: Run's passes failed twice in a row or more.
	ReasonImageGCFailed = "ImageGCFailed"
)

// Errors wrapped by the package's errors.
var (
	// ErrInvalidOptions: New cannot use the options.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrNoFsStats: GarbageCollect needs Options.Fs.
	ErrNoFsStats = errors.New("no image filesystem stats")
)

// Policy bounds the images a node keeps, as upstream's ImageGCPolicy.
type Policy struct {
	// HighThresholdPercent: at or above this usage of the image
	// filesystem, GarbageCollect removes images until usage is at
	// LowThresholdPercent. 100 turns threshold collection off.
	HighThresholdPercent int
	// LowThresholdPercent is the usage GarbageCollect aims for.
	LowThresholdPercent int
	// MinAge: an image first seen less than MinAge ago is never removed
	// (it may have just been pulled for a container about to start).
	MinAge time.Duration
	// MaxAge: an image unused for longer than MaxAge is removed by
	// GarbageCollect whatever the disk usage, once the manager has been
	// watching for MaxAge. 0 turns this off.
	MaxAge time.Duration
}

// DefaultPolicy is upstream's: 85% high, 80% low, minimum age 2m, no
// maximum age.
func DefaultPolicy() Policy {
	return Policy{HighThresholdPercent: DefaultHighThresholdPercent, LowThresholdPercent: DefaultLowThresholdPercent, MinAge: DefaultMinAge}
}

// Validate reports what is wrong with p.
func (p Policy) Validate() error {
	switch {
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return fmt.Errorf("image GC high threshold %d%% is not within 0-100", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return fmt.Errorf("image GC low threshold %d%% is not within 0-100", p.LowThresholdPercent)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return fmt.Errorf("image GC low threshold %d%% is above the high threshold %d%%", p.LowThresholdPercent, p.HighThresholdPercent)
	case p.MinAge < 0:
		return fmt.Errorf("image GC minimum age %s is negative", p.MinAge)
	case p.MaxAge < 0:
		return fmt.Errorf("image GC maximum age %s is negative", p.MaxAge)
	case p.MaxAge > 0 && p.MaxAge < p.MinAge:
		return fmt.Errorf("image GC maximum age %s is below the minimum age %s", p.MaxAge, p.MinAge)
	}
	return nil
}

// Runtime is the part of a CRI runtime the manager uses: its images and
// its containers (any state), whose images are in use, with the images
// their mounts hold (image volumes: ContainerStatus's mounts).
type Runtime interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// FsStats returns the image filesystem's capacity and available bytes.
type FsStats func(ctx context.Context) (capacity, available uint64, err error)

// EventRecorder records events on the node (client-go's
// record.EventRecorder fits).
type EventRecorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// Options configure a Manager.
type Options struct {
	// Runtime lists and removes images and lists containers. Required.
	Runtime Runtime
	// Fs measures the image filesystem, for GarbageCollect and Run. Nil
	// leaves only DeleteUnusedImages usable.
	Fs FsStats
	// Policy: the zero value is DefaultPolicy; otherwise every field is
	// taken as given.
	Policy Policy
	// PinnedImages are never removed: each is matched against an image's
	// ID, repo tags and repo digests as the runtime reports them (e.g.
	// "registry.k8s.io/pause:3.10"). Images the runtime reports pinned
	// (containerd pins its sandbox image) are kept as well.
	PinnedImages []string
	// Period is Run's interval between passes (5m).
	Period time.Duration
	// Clock is the time source. Nil means the real clock.
	Clock clock.WithTicker
	// Recorder receives events on NodeRef. Nil records none.
	Recorder EventRecorder
	// NodeRef is the object events are recorded on.
	NodeRef *v1.ObjectReference
	// Logger receives logs. Nil means discard.
	Logger *slog.Logger
	// AfterFree is called after a pass that removed images to free space
	// or for their age (GarbageCollect over the high threshold or past
	// MaxAge, DeleteUnusedImages), with the IDs of every image the runtime
	// still has and when the pass began, as upstream's post-GC hooks:
	// cri/pullrecords.Manager.Prune forgets the records of the images that
	// are gone. Nil: none.
	AfterFree func(ctx context.Context, remaining []string, began time.Time)
}

// record is what the manager knows of one image.
type record struct {
	firstDetected time.Time
	lastUsed      time.Time // zero: never seen in use
	size          uint64
	pinned        bool
	used          bool // in use at the last detection
}

// Manager removes unused images: all of them on demand (DeleteUnusedImages,
// for disk pressure), or the least recently used until the image filesystem
// is below its low threshold (GarbageCollect, every Period in Run). Safe for
// concurrent use; passes are serialized.
type Manager struct {
	o     Options
	clock clock.WithTicker
	log   *slog.Logger

	pass    chan struct{} // a one-slot semaphore: one pass at a time
	records map[string]*record
	began   time.Time // first detection, for MaxAge
}

// New validates opts and returns a Manager. It starts nothing.
func New(opts Options) (*Manager, error) {
	if opts.Runtime == nil {
		return nil, fmt.Errorf("new image GC: Runtime is required: %w", ErrInvalidOptions)
	}
	if opts.Policy == (Policy{}) {
		opts.Policy = DefaultPolicy()
	}
	if err := opts.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("new image GC: %w: %w", ErrInvalidOptions, err)
	}
	if opts.Period < 0 {
		return nil, fmt.Errorf("new image GC: negative period %s: %w", opts.Period, ErrInvalidOptions)
	}
	if opts.Period == 0 {
		opts.Period = DefaultPeriod
	}
	m := &Manager{o: opts, clock: opts.Clock, log: opts.Logger, pass: make(chan struct{}, 1), records: map[string]*record{}}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// acquire waits for the pass semaphore or ctx.
func (m *Manager) acquire(ctx context.Context) error {
	select {
	case m.pass <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) release() { <-m.pass }

// DeleteUnusedImages removes every image no container uses, except pinned
// ones and those first seen less than MinAge ago, as upstream's eviction
// manager asks under disk pressure. It implements
// eviction.ImageGarbageCollector.
func (m *Manager) DeleteUnusedImages(ctx context.Context) error {
	if err := m.acquire(ctx); err != nil {
		return fmt.Errorf("delete unused images: %w", err)
	}
	defer m.release()
	now := m.clock.Now()
	if err := m.detect(ctx, now); err != nil {
		return fmt.Errorf("delete unused images: %w", err)
	}
	freed, err := m.free(ctx, m.candidates(), math.MaxUint64, now)
	m.log.Info("Deleted unused images", "freedBytes", freed)
	m.afterFree(ctx, now)
	if err != nil {
		return fmt.Errorf("delete unused images: %w", err)
	}
	return nil
}

// GarbageCollect applies the policy once: images unused for longer than
// MaxAge go; then, when the image filesystem's usage is at or above the high
// threshold, the least recently used images go until it is at the low one.
// Not reaching it is an error and a FreeDiskSpaceFailed event.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	if m.o.Fs == nil {
		return fmt.Errorf("image garbage collection: %w", ErrNoFsStats)
	}
	if err := m.acquire(ctx); err != nil {
		return fmt.Errorf("image garbage collection: %w", err)
	}
	defer m.release()
	capacity, available, err := m.o.Fs(ctx)
	if err != nil {
		return fmt.Errorf("image garbage collection: image filesystem stats: %w", err)
	}
	if available > capacity {
		m.log.Warn("Image filesystem reports more available bytes than its capacity", "available", available, "capacity", capacity)
		available = capacity
	}
	if capacity == 0 {
		err := errors.New("invalid capacity 0 on image filesystem")
		m.event(v1.EventTypeWarning, ReasonInvalidDiskCapacity, err.Error())
		return fmt.Errorf("image garbage collection: %w", err)
	}
	now := m.clock.Now()
	if err := m.detect(ctx, now); err != nil {
		return fmt.Errorf("image garbage collection: %w", err)
	}
	candidates := m.candidates()
	var errs []error
	freeing := false
	if old := m.tooOld(candidates, now); len(old) > 0 {
		freeing = true
		freed, err := m.free(ctx, old, math.MaxUint64, now)
		m.log.Info("Removed images unused for longer than the maximum age", "maxAge", m.o.Policy.MaxAge, "images", len(old), "freedBytes", freed)
		if err != nil {
			errs = append(errs, err)
		}
		candidates = m.candidates()
	}
	usage := 100 - int(available*100/capacity)
	// The bytes that must be available at the low threshold.
	target := capacity * uint64(100-m.o.Policy.LowThresholdPercent) / 100
	if usage >= m.o.Policy.HighThresholdPercent && target > available {
		freeing = true
		toFree := target - available
		m.log.Info("Image filesystem usage is over the high threshold, freeing bytes down to the low threshold",
			"usage", usage, "highThreshold", m.o.Policy.HighThresholdPercent, "lowThreshold", m.o.Policy.LowThresholdPercent, "bytesToFree", toFree)
		freed, err := m.free(ctx, candidates, toFree, now)
		if err != nil {
			errs = append(errs, err)
		} else if freed < toFree {
			msg := fmt.Sprintf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", toFree, freed)
			m.event(v1.EventTypeWarning, ReasonFreeDiskSpaceFailed, msg)
			errs = append(errs, errors.New(msg))
		}
	}
	if freeing {
		m.afterFree(ctx, now)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("image garbage collection: %w", err)
	}
	return nil
}

// afterFree calls Options.AfterFree with the images left.
func (m *Manager) afterFree(ctx context.Context, began time.Time) {
	if m.o.AfterFree == nil {
		return
	}
	remaining := make([]string, 0, len(m.records))
	for id := range m.records {
		remaining = append(remaining, id)
	}
	slices.Sort(remaining)
	m.o.AfterFree(ctx, remaining, began)
}

// Run runs GarbageCollect at once and then every Period until ctx ends.
// A failure is logged; failures twice in a row or more are also a
// warning event ImageGCFailed on the node, as upstream.
func (m *Manager) Run(ctx context.Context) error {
	if m.o.Fs == nil {
		return fmt.Errorf("run image GC: %w", ErrNoFsStats)
	}
	t := m.clock.NewTicker(m.o.Period)
	defer t.Stop()
	failedBefore := false
	for {
		err := m.GarbageCollect(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && failedBefore:
			m.log.Error("Image garbage collection failed multiple times in a row", "err", err)
			m.event(v1.EventTypeWarning, ReasonImageGCFailed, err.Error())
		case err != nil:
			m.log.Warn("Image garbage collection failed once; stats may not be ready yet", "err", err)
		case failedBefore:
			m.log.Info("Image garbage collection succeeded")
		}
		failedBefore = err != nil
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// detect lists images and containers and updates the records: an image
// first listed now is first detected now; one a container uses was last
// used now; an image no longer listed is forgotten.
func (m *Manager) detect(ctx context.Context, now time.Time) error {
	images, err := m.o.Runtime.ListImages(ctx, nil)
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	containers, err := m.o.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	inUse := make(map[string]bool, 2*len(containers))
	for _, c := range containers {
		for _, ref := range []string{c.GetImageRef(), c.GetImageId(), c.GetImage().GetImage()} {
			if ref != "" {
				inUse[ref] = true
			}
		}
		if err := m.imageMountsInUse(ctx, c.GetId(), inUse); err != nil {
			return err
		}
	}
	pinned := make(map[string]bool, len(m.o.PinnedImages))
	for _, ref := range m.o.PinnedImages {
		pinned[ref] = true
	}
	if m.began.IsZero() {
		m.began = now
	}
	seen := make(map[string]bool, len(images))
	for _, img := range images {
		id := img.GetId()
		seen[id] = true
		r, ok := m.records[id]
		if !ok {
			r = &record{firstDetected: now}
			m.records[id] = r
		}
		r.size, r.pinned, r.used = img.GetSize(), img.GetPinned() || matches(img, pinned), matches(img, inUse)
		if r.used {
			r.lastUsed = now
		}
	}
	for id := range m.records {
		if !seen[id] {
			delete(m.records, id)
		}
	}
	return nil
}

// imageMountsInUse adds to inUse the images the container mounts (image
// volumes, upstream's ImageVolume), which its status reports, as
// upstream's image GC asks each container's status. A container gone
// since the list (NotFound) mounts nothing; any other failure fails the
// detection, as upstream's.
func (m *Manager) imageMountsInUse(ctx context.Context, id string, inUse map[string]bool) error {
	resp, err := m.o.Runtime.ContainerStatus(ctx, id, false)
	if errors.Is(err, cri.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("status of container %s: %w", id, err)
	}
	for _, mt := range resp.GetStatus().GetMounts() {
		if ref := mt.GetImage().GetImage(); ref != "" {
			inUse[ref] = true
		}
	}
	return nil
}

// matches reports whether set holds the image's ID or one of its references.
func matches(img *runtimeapi.Image, set map[string]bool) bool {
	if set[img.GetId()] {
		return true
	}
	for _, ref := range img.GetRepoTags() {
		if set[ref] {
			return true
		}
	}
	for _, ref := range img.GetRepoDigests() {
		if set[ref] {
			return true
		}
	}
	return false
}

// candidate is an image that may be removed.
type candidate struct {
	id string
	record
}

// candidates are the images neither in use nor pinned, least recently used
// first (never used before any use), then first detected first, then by ID.
func (m *Manager) candidates() []candidate {
	out := make([]candidate, 0, len(m.records))
	for id, r := range m.records {
		if r.used || r.pinned {
			continue
		}
		out = append(out, candidate{id, *r})
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if c := a.lastUsed.Compare(b.lastUsed); c != 0 {
			return c
		}
		if c := a.firstDetected.Compare(b.firstDetected); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// tooOld are the candidates unused for longer than MaxAge, once the manager
// has watched for MaxAge (before that an image's age is unknown).
func (m *Manager) tooOld(candidates []candidate, now time.Time) []candidate {
	maxAge := m.o.Policy.MaxAge
	if maxAge == 0 || now.Sub(m.began) <= maxAge {
		return nil
	}
	var out []candidate
	for _, c := range candidates {
		last := c.lastUsed
		if last.IsZero() {
			last = c.firstDetected
		}
		if now.Sub(last) > maxAge {
			out = append(out, c)
		}
	}
	return out
}

// free removes candidates in order, skipping those younger than MinAge,
// until bytes are freed; it returns the bytes freed and the removals'
// errors, joined (one failure does not stop the others).
func (m *Manager) free(ctx context.Context, candidates []candidate, bytes uint64, now time.Time) (uint64, error) {
	var freed uint64
	var errs []error
	for _, c := range candidates {
		if freed >= bytes {
			break
		}
		if now.Sub(c.firstDetected) < m.o.Policy.MinAge {
			m.log.Debug("Image is younger than the minimum GC age; kept", "image", c.id, "age", now.Sub(c.firstDetected), "minAge", m.o.Policy.MinAge)
			continue
		}
		m.log.Info("Removing image to free bytes", "image", c.id, "size", c.size)
		if err := m.o.Runtime.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: c.id}); err != nil {
			errs = append(errs, fmt.Errorf("remove image %s: %w", c.id, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		delete(m.records, c.id)
		freed += c.size
	}
	if len(errs) > 0 {
		return freed, fmt.Errorf("freed %d bytes; %w", freed, errors.Join(errs...))
	}
	return freed, nil
}

func (m *Manager) event(eventtype, reason, msg string) {
	if m.o.Recorder != nil && m.o.NodeRef != nil {
		m.o.Recorder.Eventf(m.o.NodeRef, eventtype, reason, "%s", msg)
	}
}
