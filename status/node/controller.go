package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Upstream's timings.
const (
	// DefaultStatusUpdatePeriod is how often the status is built and
	// compared with the last one pushed (nodeStatusUpdateFrequency).
	DefaultStatusUpdatePeriod = 10 * time.Second
	// DefaultStatusReportPeriod is how often an unchanged status is pushed
	// anyway (nodeStatusReportFrequency).
	DefaultStatusReportPeriod = 5 * time.Minute
	// DefaultLeaseDuration is the lease's duration (nodeLeaseDurationSeconds).
	DefaultLeaseDuration = 40 * time.Second
	// DefaultLeaseRenewPeriod is how often the default lease is renewed: a
	// quarter of its duration, as upstream's renew interval fraction.
	DefaultLeaseRenewPeriod = DefaultLeaseDuration / 4
	// DefaultLeaseNamespace holds node leases.
	DefaultLeaseNamespace = "kube-node-lease"
	// DefaultCallTimeout bounds each call to a provider or a sink, on the
	// injected clock.
	DefaultCallTimeout = 10 * time.Second
)

// Lease retry backoff after a failed renewal (upstream's: 200ms doubling to 7s).
const (
	leaseRetryBase = 200 * time.Millisecond
	leaseRetryMax  = 7 * time.Second
)

// Runtime is the part of a CRI runtime the node status reads: its name and
// version, and its conditions (cri.Versioner's and cri.StatusReporter's
// methods; cri.RuntimeService and fake.Runtime satisfy it).
type Runtime interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// ImageLister lists the runtime's images (cri.ImageManager's method).
type ImageLister interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// PLEGHealth is the PLEG's health check (pleg.Generic and pleg.Evented
// implement it): false with an error saying why when unhealthy.
type PLEGHealth interface {
	Healthy() (bool, error)
}

// Machine describes the machine: its capacity and OS information.
// LocalMachine reads them from the host.
type Machine interface {
	Capacity(ctx context.Context) (v1.ResourceList, error)
	SystemInfo(ctx context.Context) (v1.NodeSystemInfo, error)
}

// ShutdownStatus returns an error while the node is shutting down
// (upstream's method name): its text is the Ready condition's message.
type ShutdownStatus interface {
	ShutdownStatus() error
}

// ExtendedResources gives resources whose allocatable is their own, not
// capacity less a reservation: each device plugin resource's capacity (its
// devices) and allocatable (the healthy ones). devices.Manager implements
// it.
type ExtendedResources interface {
	Resources() (capacity, allocatable v1.ResourceList)
}

// Addresser gives the node's addresses.
type Addresser interface {
	NodeAddresses(ctx context.Context) ([]v1.NodeAddress, error)
}

// StaticAddresses is an Addresser with a fixed list.
type StaticAddresses []v1.NodeAddress

// NodeAddresses returns the list.
func (a StaticAddresses) NodeAddresses(context.Context) ([]v1.NodeAddress, error) { return a, nil }

var _ Addresser = StaticAddresses(nil)

// StatusSink receives the node's status: the API server's nodes/status in a
// kubelet (an implementation with client-go lives in examples).
type StatusSink interface {
	UpdateNodeStatus(ctx context.Context, nodeName string, status v1.NodeStatus) error
}

// StatusSinkFunc adapts a function to StatusSink.
type StatusSinkFunc func(ctx context.Context, nodeName string, status v1.NodeStatus) error

// UpdateNodeStatus calls f.
func (f StatusSinkFunc) UpdateNodeStatus(ctx context.Context, nodeName string, status v1.NodeStatus) error {
	return f(ctx, nodeName, status)
}

var _ StatusSink = StatusSinkFunc(nil)

// LeaseSink stores the node's lease (coordination.k8s.io/v1), with
// client-go's method shapes. A lease it does not hold is an error wrapping
// ErrLeaseNotFound.
type LeaseSink interface {
	GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// ErrInvalidOptions is wrapped by New's error when a required option is
// missing or a value is out of range.
var ErrInvalidOptions = errors.New("invalid options")

// Options configures New. The zero value of an optional field is its
// documented default.
type Options struct {
	// NodeName is the node's name. Required.
	NodeName string
	// Sink receives the status. Required.
	Sink StatusSink
	// Runtime reports the runtime's version and health. Required.
	Runtime Runtime
	// Machine reports capacity and OS information. Required.
	Machine Machine
	// Leases receives the node's lease. Nil means no lease.
	Leases LeaseSink
	// Images lists images for the status. Nil means no images listed.
	Images ImageLister
	// PLEG is checked for the Ready condition. Nil means not checked.
	PLEG PLEGHealth
	// Pressure gives the pressure conditions. Nil means no pressure.
	Pressure Pressure
	// Shutdown says whether the node is shutting down, which makes it
	// NotReady (nodeshutdown.Manager implements it). Nil means it never is.
	Shutdown ShutdownStatus
	// Addresses gives the node's addresses. Nil means none.
	Addresses Addresser
	// Reserved is taken off the capacity to give the allocatable
	// resources (kube-reserved + system-reserved + hard eviction
	// thresholds). Nil means nothing reserved. Ignored when Reservation is
	// set.
	Reserved v1.ResourceList
	// Reservation, when set, gives what is reserved of the capacity the
	// Machine reported in each round: for reservations that depend on it,
	// such as an eviction threshold in percent (Reserved sums the parts).
	Reservation func(capacity v1.ResourceList) v1.ResourceList
	// Extended gives resources reported as they are, with an allocatable
	// of their own: device plugins' (devices.Manager). Nil means none.
	Extended ExtendedResources
	// KubeletVersion is reported in nodeInfo. Empty means "v0.0.0-kubeletkit".
	KubeletVersion string
	// KubeletPort is reported in daemonEndpoints. 0 means none.
	KubeletPort int32
	// DeclaredFeatures are the features the node declares in
	// status.declaredFeatures (upstream's NodeDeclaredFeatures), which the
	// API server and the scheduler read: ExtendWebSocketsToKubelet tells
	// the API server to send kubectl's WebSockets on to the node. Each must
	// be a name the API server accepts (UpperCamelCase, segments after "/",
	// letters and digits), else New fails; the status lists them sorted,
	// once each. Empty leaves the field unset.
	DeclaredFeatures []string
	// StatusUpdatePeriod, StatusReportPeriod, LeaseDuration,
	// LeaseRenewPeriod, CallTimeout: 0 means the defaults; the default
	// LeaseRenewPeriod is a quarter of LeaseDuration.
	StatusUpdatePeriod, StatusReportPeriod time.Duration
	LeaseDuration, LeaseRenewPeriod        time.Duration
	CallTimeout                            time.Duration
	// LeaseNamespace: "" means kube-node-lease.
	LeaseNamespace string
	// Clock is the time source. Nil means the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger receives logs. Nil means discard.
	Logger *slog.Logger
}

// Controller builds the node's status every StatusUpdatePeriod and pushes
// it when it changed or StatusReportPeriod passed since the last push, and
// renews the node's lease every LeaseRenewPeriod.
type Controller struct {
	o   Options
	log *slog.Logger

	mu         sync.Mutex
	running    bool
	last       *v1.NodeStatus // last built
	pushed     *v1.NodeStatus // last pushed successfully
	pushedAt   time.Time
	lease      *coordinationv1.Lease
	leaseFails int
}

// New validates opts and returns a Controller. It starts no goroutine.
func New(opts Options) (*Controller, error) {
	switch {
	case opts.NodeName == "":
		return nil, fmt.Errorf("new node status controller: %w: NodeName is required", ErrInvalidOptions)
	case opts.Sink == nil:
		return nil, fmt.Errorf("new node status controller: %w: Sink is required", ErrInvalidOptions)
	case opts.Runtime == nil:
		return nil, fmt.Errorf("new node status controller: %w: Runtime is required", ErrInvalidOptions)
	case opts.Machine == nil:
		return nil, fmt.Errorf("new node status controller: %w: Machine is required", ErrInvalidOptions)
	case opts.StatusUpdatePeriod < 0 || opts.StatusReportPeriod < 0 || opts.LeaseDuration < 0 || opts.LeaseRenewPeriod < 0 || opts.CallTimeout < 0:
		return nil, fmt.Errorf("new node status controller: %w: negative period", ErrInvalidOptions)
	}
	if name, bad := invalidFeature(opts.DeclaredFeatures); bad {
		return nil, fmt.Errorf("new node status controller: %w: declared feature %q: must be an UpperCamelCase name, "+
			"further segments after '/', letters and digits only, at most 253 characters", ErrInvalidOptions, name)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&opts.StatusUpdatePeriod, DefaultStatusUpdatePeriod)
	def(&opts.StatusReportPeriod, DefaultStatusReportPeriod)
	def(&opts.LeaseDuration, DefaultLeaseDuration)
	def(&opts.LeaseRenewPeriod, opts.LeaseDuration/4)
	def(&opts.CallTimeout, DefaultCallTimeout)
	if opts.LeaseNamespace == "" {
		opts.LeaseNamespace = DefaultLeaseNamespace
	}
	if opts.KubeletVersion == "" {
		opts.KubeletVersion = "v0.0.0-kubeletkit"
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.DeclaredFeatures = slices.Clone(opts.DeclaredFeatures)
	c := &Controller{o: opts, log: opts.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Status returns the last status built.
func (c *Controller) Status() (v1.NodeStatus, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return v1.NodeStatus{}, false
	}
	return *c.last.DeepCopy(), true
}

// SetKubeletPort sets the port reported in daemonEndpoints, as
// Options.KubeletPort, for a kubelet that learns its port once it listens
// (":0"). Call it before Run.
func (c *Controller) SetKubeletPort(port int32) { c.o.KubeletPort = port }

// Run updates the status and renews the lease until ctx ends, then waits
// for its goroutines and returns nil. A failed update is tried again at
// the next period; the first failure of a streak is logged as a warning,
// the others at debug level, and the update that ends it says how many
// there were. Run may be called once.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("run node status controller: Run was already called")
	}
	c.running = true
	c.mu.Unlock()

	var wg sync.WaitGroup
	if c.o.Leases != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.leaseLoop(ctx)
		}()
	}
	ticker := c.o.Clock.NewTicker(c.o.StatusUpdatePeriod)
	defer ticker.Stop()
	failures := 0 // in a row: the first is a warning, the others debug
	for {
		switch err := c.SyncStatus(ctx); {
		case ctx.Err() != nil:
		case err != nil && failures == 0:
			c.log.Warn("update node status; will retry every period", "node", c.o.NodeName, "period", c.o.StatusUpdatePeriod, "err", err)
			failures++
		case err != nil:
			c.log.Debug("update node status", "node", c.o.NodeName, "failures", failures+1, "err", err)
			failures++
		case failures > 0:
			c.log.Info("updated node status after failures", "node", c.o.NodeName, "failures", failures)
			failures = 0
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-ticker.C():
		}
	}
}

// SyncStatus runs one round: it asks the providers, builds the status and
// pushes it if it changed (heartbeat times aside) or the report period
// passed since the last push. Run calls it every StatusUpdatePeriod.
func (c *Controller) SyncStatus(ctx context.Context) error {
	in := c.collect(ctx)
	c.mu.Lock()
	in.Old = c.last
	in.Now = c.o.Clock.Now()
	st := BuildStatus(in)
	c.last = &st
	due := c.pushed == nil || !sameIgnoringHeartbeats(c.pushed, &st) || !in.Now.Before(c.pushedAt.Add(c.o.StatusReportPeriod))
	c.mu.Unlock()
	if !due {
		return nil
	}
	cctx, cancel := c.withTimeout(ctx)
	defer cancel()
	if err := c.o.Sink.UpdateNodeStatus(cctx, c.o.NodeName, *st.DeepCopy()); err != nil {
		return fmt.Errorf("update node status %s: %w", c.o.NodeName, err)
	}
	c.mu.Lock()
	c.pushed, c.pushedAt = &st, in.Now
	c.mu.Unlock()
	return nil
}

// collect asks every provider, each call bounded by CallTimeout. A failing
// provider leaves its part empty (the Ready condition says why for the
// runtime and the PLEG).
func (c *Controller) collect(ctx context.Context) Input {
	call := func(f func(context.Context)) {
		cctx, cancel := c.withTimeout(ctx)
		defer cancel()
		f(cctx)
	}
	in := Input{Reserved: c.o.Reserved, KubeletVersion: c.o.KubeletVersion, KubeletPort: c.o.KubeletPort, Pressure: c.o.Pressure,
		DeclaredFeatures: c.o.DeclaredFeatures}
	call(func(ctx context.Context) {
		var err error
		if in.Capacity, err = c.o.Machine.Capacity(ctx); err != nil {
			c.log.Warn("machine capacity", "err", err)
		}
		if c.o.Reservation != nil {
			in.Reserved = c.o.Reservation(in.Capacity)
		}
		if c.o.Extended != nil {
			in.ExtendedCapacity, in.ExtendedAllocatable = c.o.Extended.Resources()
		}
		if in.SystemInfo, err = c.o.Machine.SystemInfo(ctx); err != nil {
			c.log.Warn("machine system info", "err", err)
		}
	})
	call(func(ctx context.Context) { in.RuntimeVersion, in.RuntimeVersionErr = c.o.Runtime.Version(ctx, "v1") })
	call(func(ctx context.Context) { in.RuntimeStatus, in.RuntimeStatusErr = c.o.Runtime.Status(ctx, false) })
	if c.o.Images != nil {
		call(func(ctx context.Context) {
			var err error
			if in.Images, err = c.o.Images.ListImages(ctx, nil); err != nil {
				c.log.Warn("list images", "err", err)
			}
		})
	}
	if c.o.Addresses != nil {
		call(func(ctx context.Context) {
			var err error
			if in.Addresses, err = c.o.Addresses.NodeAddresses(ctx); err != nil {
				c.log.Warn("node addresses", "err", err)
			}
		})
	}
	if c.o.Shutdown != nil {
		in.ShutdownErr = c.o.Shutdown.ShutdownStatus()
	}
	if c.o.PLEG != nil {
		if ok, err := c.o.PLEG.Healthy(); !ok {
			if err == nil {
				err = errors.New("unhealthy")
			}
			in.PLEGErr = err
		}
	}
	return in
}

// withTimeout returns a context cancelled after CallTimeout on the injected
// clock.
func (c *Controller) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(ctx)
	t := c.o.Clock.AfterFunc(c.o.CallTimeout, cancel)
	return cctx, func() {
		t.Stop()
		cancel()
	}
}

func sameIgnoringHeartbeats(a, b *v1.NodeStatus) bool {
	ac, bc := a.DeepCopy(), b.DeepCopy()
	for _, s := range []*v1.NodeStatus{ac, bc} {
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return equality.Semantic.DeepEqual(ac, bc)
}

// leaseLoop renews the lease every LeaseRenewPeriod, and after a failure
// retries with backoff (200ms doubling to 7s) until it succeeds. The first
// failure of a streak is a warning, the others are logged at debug level,
// and the renewal that ends it says how many there were.
func (c *Controller) leaseLoop(ctx context.Context) {
	for {
		wait := c.o.LeaseRenewPeriod
		if err := c.RenewLease(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			c.leaseFails++
			fails := c.leaseFails
			wait = min(leaseRetryBase<<min(fails-1, 10), leaseRetryMax)
			c.mu.Unlock()
			if fails == 1 { // once per streak: the retries of an outage are not news
				c.log.Warn("renew node lease; will retry with back-off", "node", c.o.NodeName, "retryIn", wait, "err", err)
			} else {
				c.log.Debug("renew node lease; will retry", "node", c.o.NodeName, "failures", fails, "retryIn", wait, "err", err)
			}
		} else {
			c.mu.Lock()
			fails := c.leaseFails
			c.leaseFails = 0
			c.mu.Unlock()
			if fails > 0 {
				c.log.Info("renewed node lease after failures", "node", c.o.NodeName, "failures", fails)
			}
		}
		t := c.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// RenewLease creates the node's lease or renews it: holder the node,
// duration LeaseDuration, renew time now. The leaseLoop calls it.
func (c *Controller) RenewLease(ctx context.Context) error {
	cctx, cancel := c.withTimeout(ctx)
	defer cancel()
	c.mu.Lock()
	lease := c.lease
	c.mu.Unlock()
	if lease == nil {
		got, err := c.o.Leases.GetLease(cctx, c.o.LeaseNamespace, c.o.NodeName)
		switch {
		case errors.Is(err, ErrLeaseNotFound):
			created, err := c.o.Leases.CreateLease(cctx, c.newLease())
			if err != nil {
				return fmt.Errorf("create lease %s/%s: %w", c.o.LeaseNamespace, c.o.NodeName, err)
			}
			c.setLease(created)
			return nil
		case err != nil:
			return fmt.Errorf("get lease %s/%s: %w", c.o.LeaseNamespace, c.o.NodeName, err)
		}
		lease = got
	}
	next := lease.DeepCopy()
	c.fillLease(next)
	updated, err := c.o.Leases.UpdateLease(cctx, next)
	if err != nil {
		c.setLease(nil) // read it again next time (it may have changed or gone)
		return fmt.Errorf("update lease %s/%s: %w", c.o.LeaseNamespace, c.o.NodeName, err)
	}
	c.setLease(updated)
	return nil
}

func (c *Controller) setLease(l *coordinationv1.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lease = l
}

func (c *Controller) newLease() *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.o.NodeName, Namespace: c.o.LeaseNamespace}}
	c.fillLease(l)
	return l
}

func (c *Controller) fillLease(l *coordinationv1.Lease) {
	holder := c.o.NodeName
	secs := int32(c.o.LeaseDuration / time.Second)
	now := metav1.NewMicroTime(c.o.Clock.Now())
	l.Spec.HolderIdentity = &holder
	l.Spec.LeaseDurationSeconds = &secs
	l.Spec.RenewTime = &now
}
