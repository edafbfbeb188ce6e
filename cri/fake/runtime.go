package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Defaults of Options.
const (
	// DefaultRuntimeName is what Version reports as the runtime name.
	DefaultRuntimeName = "kubeletkit-fake"
	// DefaultRuntimeVersion is what Version reports as the runtime version.
	DefaultRuntimeVersion = "0.1.0"
	// DefaultEventQueueSize bounds the events queued for one subscriber of
	// GetContainerEvents. It is the size of containerd's own event channel.
	DefaultEventQueueSize = 1000
	// DefaultCallHistory is how many calls are recorded at most.
	DefaultCallHistory = 10000
)

// Options configures New. The zero value is usable: a real clock, no images,
// every container runs until it is stopped, every image can be pulled.
type Options struct {
	// Clock drives every timestamp, scripted exit, stop timeout, latency and
	// pull delay. nil means the real clock. With a
	// k8s.io/utils/clock/testing.FakeClock, scripted exits happen inside
	// Step. (The fake needs AfterFunc, hence clock.WithDelayedExecution,
	// which both clock.RealClock and FakeClock implement.)
	Clock clock.WithDelayedExecution
	// Logger receives one debug line per state change. nil discards.
	Logger *slog.Logger
	// Images are present from the start, as if pulled.
	Images []string
	// Rules script container behaviour; the first rule that matches a
	// container when it starts decides. A container no rule matches runs
	// until it is stopped. SetRules replaces them later.
	Rules []Rule
	// ExecRules script ExecSync and streaming exec; the first match
	// decides. Commands no rule matches get the built-in commands described
	// in the package doc.
	ExecRules []ExecRule
	// PortRules script what answers a port-forward to a pod's port; the
	// first match decides. A port no rule matches refuses the connection,
	// as a pod where nothing listens.
	PortRules []PortRule
	// UsageRules script the CPU and memory of running containers (see
	// UsageRule); SetUsageRules replaces them later. A container no rule
	// matches uses nothing, unless SetContainerStats says otherwise.
	UsageRules []UsageRule
	// Registry, when not nil, is the set of references PullImage can pull
	// (in any spelling that normalizes to the same reference, see
	// NormalizeImage); other pulls fail with an error wrapping
	// cri.ErrNotFound, as a registry answers for an unknown image. nil means
	// every reference can be pulled.
	Registry []string
	// RuntimeName and RuntimeVersion are what Version reports. Empty means
	// DefaultRuntimeName and DefaultRuntimeVersion.
	RuntimeName, RuntimeVersion string
	// CallHistory bounds how many calls are recorded; when it is reached the
	// older half is forgotten. 0 means DefaultCallHistory; negative records
	// nothing.
	CallHistory int
	// EventQueueSize bounds each events subscriber's queue; see
	// GetContainerEvents. 0 or negative means DefaultEventQueueSize.
	EventQueueSize int
}

// Runtime is an in-memory CRI runtime. It implements cri.RuntimeService and
// cri.ImageService and is safe for concurrent use. Create it with New.
//
// A test overrides a method by embedding *Runtime in a type of its own and
// defining the method there; every other method is the fake's.
type Runtime struct {
	clock      clock.WithDelayedExecution
	log        *slog.Logger
	name, ver  string
	queueLimit int
	callLimit  int
	done       chan struct{} // closed by Close

	// mu guards everything below. It is never held while calling the clock
	// (a FakeClock runs timer callbacks, which take mu, under its own lock)
	// nor while waiting on a ctx or a timer, nor while calling out to user
	// code other than the logger.
	mu         sync.Mutex
	closed     bool
	seq        uint64
	sandboxes  objects[*sandbox]
	containers objects[*container]
	// names reserves sandbox and container names as containerd does.
	sandboxNames   map[string]string
	containerNames map[string]string
	ips            ipPool
	staleTimers    []clock.Timer // to stop once mu is released (see unlock)

	images    map[string]*runtimeapi.Image // by ID
	imageRefs map[string]string            // normalized reference → ID
	registry  map[string]bool              // normalized refs; nil: anything
	pulls     map[string]PullBehavior      // by normalized ref
	imageFs   *runtimeapi.ImageFsInfoResponse
	fss       Filesystems // mountpoints; zero: the snapshotter root

	rules      []rule
	execRules  []execRule
	usageRules []usageRule
	portRules  []portRule
	streamer   *StreamingServer // serving the streaming sessions; nil: none

	faults map[Method]*faultState
	calls  []Call
	subs   map[*subscriber]struct{}

	stats      map[string]*runtimeapi.ContainerStats
	podStats   map[string]*runtimeapi.PodSandboxStats
	conditions [2]*runtimeapi.RuntimeCondition // RuntimeReady, NetworkReady
	cgroupDrv  runtimeapi.CgroupDriver
	runtimeCfg *runtimeapi.RuntimeConfig
}

var (
	_ cri.RuntimeService = (*Runtime)(nil)
	_ cri.ImageService   = (*Runtime)(nil)
)

// ErrClosed is wrapped by the error of every call made after Close, and of
// waits that Close cut short. It also wraps cri.ErrUnavailable, as a runtime
// that went away.
var ErrClosed = fmt.Errorf("fake runtime closed: %w", cri.ErrUnavailable)

// New returns a runtime configured by opts. It starts no goroutine and never
// fails: every field of Options has a usable zero value.
func New(opts Options) *Runtime {
	r := &Runtime{
		clock:          opts.Clock,
		log:            opts.Logger,
		name:           opts.RuntimeName,
		ver:            opts.RuntimeVersion,
		queueLimit:     opts.EventQueueSize,
		callLimit:      opts.CallHistory,
		done:           make(chan struct{}),
		sandboxNames:   map[string]string{},
		containerNames: map[string]string{},
		ips:            newIPPool(podNetwork),
		images:         map[string]*runtimeapi.Image{},
		imageRefs:      map[string]string{},
		pulls:          map[string]PullBehavior{},
		rules:          compileRules(opts.Rules),
		execRules:      compileExecRules(opts.ExecRules),
		portRules:      compilePortRules(opts.PortRules),
		usageRules:     compileUsageRules(opts.UsageRules),
		faults:         map[Method]*faultState{},
		subs:           map[*subscriber]struct{}{},
		stats:          map[string]*runtimeapi.ContainerStats{},
		podStats:       map[string]*runtimeapi.PodSandboxStats{},
		conditions: [2]*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		},
		cgroupDrv: runtimeapi.CgroupDriver_CGROUPFS,
	}
	r.sandboxes.init()
	r.containers.init()
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.name == "" {
		r.name = DefaultRuntimeName
	}
	if r.ver == "" {
		r.ver = DefaultRuntimeVersion
	}
	if r.queueLimit <= 0 {
		r.queueLimit = DefaultEventQueueSize
	}
	if r.callLimit == 0 {
		r.callLimit = DefaultCallHistory
	}
	if opts.Registry != nil {
		r.registry = make(map[string]bool, len(opts.Registry))
		for _, ref := range opts.Registry {
			r.registry[NormalizeImage(ref)] = true
		}
	}
	for _, ref := range opts.Images {
		if ref != "" {
			r.addImageLocked(newImage(ref))
		}
	}
	return r
}

// Close stops every pending scripted timer, ends every events stream (with
// an error wrapping ErrClosed) and cuts short the calls waiting on the clock.
// Later CRI calls fail with ErrClosed; the inspection methods (Sandboxes,
// Containers, Calls, ...) keep working. Close is idempotent.
func (r *Runtime) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.done)
	for _, c := range r.containers.all() {
		if c.timer != nil {
			r.staleTimers = append(r.staleTimers, c.timer)
			c.timer = nil
		}
		r.stopLoggingLocked(c)
		if c.stdio != nil {
			c.stdio.close(ErrClosed)
		}
	}
	for s := range r.subs {
		s.fail(ErrClosed)
	}
	clear(r.subs)
	r.unlock()
}

// unlock releases mu and then stops the timers that became stale while it
// was held (stopping a FakeClock timer takes the clock's lock, which must
// never be taken under mu). Timer callbacks, which run under the clock's
// lock, release mu with mu.Unlock instead.
func (r *Runtime) unlock() {
	stale := r.staleTimers
	r.staleTimers = nil
	r.mu.Unlock()
	for _, t := range stale {
		t.Stop()
	}
}

// now reads the clock; it must be called without mu held.
func (r *Runtime) now() int64 { return r.clock.Now().UnixNano() }

// idLength is the length of every sandbox and container ID: 64 hex digits,
// as containerd's.
const idLength = 64

// newIDLocked returns an ID of idLength hex digits, deterministic for a
// given sequence of calls.
func (r *Runtime) newIDLocked(kind, name string) string {
	r.seq++
	sum := sha256.Sum256([]byte(kind + "/" + name + "/" + strconv.FormatUint(r.seq, 10)))
	return hex.EncodeToString(sum[:])
}

// wait blocks for d on the runtime's clock, or until ctx ends, until exited
// is closed (nil never is), or until Close. It returns nil when d passed or
// exited was closed. It must be called without mu held.
func (r *Runtime) wait(ctx context.Context, d time.Duration, exited <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return ErrClosed
	}
}

// objects keeps sandboxes or containers by ID and in creation order, so that
// lists are deterministic. Removal marks the object and leaves a hole in the
// order that is compacted once holes are half of it: amortized O(1), and a
// walk over the order needs no lookup by ID.
type objects[T interface {
	comparable
	objectID() string
	held() *membership
}] struct {
	byID  map[string]T
	order []T
	holes int
}

// membership is what objects keeps in each object it holds.
type membership struct {
	removed bool
}

func (m *membership) held() *membership { return m }

func (o *objects[T]) init() { o.byID = map[string]T{} }

func (o *objects[T]) len() int { return len(o.byID) }

func (o *objects[T]) add(v T) {
	o.byID[v.objectID()] = v
	o.order = append(o.order, v)
}

func (o *objects[T]) remove(v T) {
	delete(o.byID, v.objectID())
	v.held().removed = true
	o.holes++
	if o.holes > 16 && o.holes > len(o.order)/2 {
		kept := o.order[:0]
		for _, x := range o.order {
			if !x.held().removed {
				kept = append(kept, x)
			}
		}
		clear(o.order[len(kept):])
		o.order, o.holes = kept, 0
	}
}

// all returns the objects in creation order. The slice is fresh.
func (o *objects[T]) all() []T {
	out := make([]T, 0, len(o.byID))
	o.each(func(x T) { out = append(out, x) })
	return out
}

// each calls f for every object in creation order.
func (o *objects[T]) each(f func(T)) {
	for _, x := range o.order {
		if !x.held().removed {
			f(x)
		}
	}
}

var errAmbiguous = errors.New("ambiguous ID prefix")

// resolve finds the object whose ID is id or, as containerd accepts, starts
// with it when only one does. A missing ID is ErrNotFound, an ambiguous
// prefix ErrInvalidArgument, an empty ID ErrInvalidArgument.
func (o *objects[T]) resolve(id, kind string) (T, error) {
	var zero T
	if id == "" {
		return zero, fmt.Errorf("%s ID is empty: %w", kind, cri.ErrInvalidArgument)
	}
	if v, ok := o.byID[id]; ok {
		return v, nil
	}
	if len(id) >= idLength {
		// Every ID has idLength digits, so a missing whole ID cannot be
		// the prefix of another: no need to scan them all.
		return zero, fmt.Errorf("%s %q: %w", kind, id, cri.ErrNotFound)
	}
	var found T
	n := 0
	for k, v := range o.byID {
		if strings.HasPrefix(k, id) {
			found = v
			n++
		}
	}
	switch n {
	case 0:
		return zero, fmt.Errorf("%s %q: %w", kind, id, cri.ErrNotFound)
	case 1:
		return found, nil
	}
	return zero, fmt.Errorf("%s %q: %w (%d match): %w", kind, id, errAmbiguous, n, cri.ErrInvalidArgument)
}

// matchLabels reports whether labels has every key and value of selector.
// Callers that list many objects test len(selector) first, which spares
// them reading each object's labels when there is nothing to match.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ignoreNotFound returns nil for an error wrapping cri.ErrNotFound.
func ignoreNotFound(err error) error {
	if errors.Is(err, cri.ErrNotFound) {
		return nil
	}
	return err
}
