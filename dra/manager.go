package dra

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/clock"
)

var (
	// ErrClaimNotCreated is wrapped by PrepareResources' error for a claim
	// of a template that the resourceclaim controller has not made yet (no
	// entry in the pod's status.resourceClaimStatuses).
	ErrClaimNotCreated = errors.New("ResourceClaim not created yet")
	// ErrUnsupportedClaim is wrapped for a pod resource claim that names
	// neither a claim nor a template.
	ErrUnsupportedClaim = errors.New("none of the supported fields are set")
	// ErrNotAllocated is wrapped for a claim the scheduler has not
	// allocated.
	ErrNotAllocated = errors.New("not allocated")
	// ErrDriverNotRegistered is wrapped for a claim allocated a device of
	// a DRA driver the node has not registered: "DRA driver NAME is not
	// registered".
	ErrDriverNotRegistered = errors.New("not registered")
	// ErrNoClaims is wrapped when a claim must be read and the Manager has
	// no Claims to read it from.
	ErrNoClaims = errors.New("no source of ResourceClaims")
)

// Claims gives ResourceClaims by namespace and name, as the API server
// holds them (resource.k8s.io/v1). A claim that does not exist is an error
// (the API server's NotFound).
type Claims interface {
	ResourceClaim(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error)
}

// ClaimsFunc adapts a function to Claims.
type ClaimsFunc func(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error)

// ResourceClaim calls f.
func (f ClaimsFunc) ResourceClaim(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
	return f(ctx, namespace, name)
}

var _ Claims = ClaimsFunc(nil)

// Options configure a Manager. Every zero value is a documented default.
type Options struct {
	// Claims reads the pods' ResourceClaims (an API server's). Nil: none
	// can be read, and a pod with a claim to read is held with an error
	// wrapping ErrNoClaims.
	Claims Claims
	// StateDir is where the checkpoint of the prepared claims
	// (CheckpointFile) is kept, upstream's kubelet root directory; it is
	// created when first written. Empty: no checkpoint, and a restarted
	// node forgets what it prepared. A relative path fails New.
	StateDir string
	// CallTimeout bounds each call to a DRA plugin. Zero:
	// DefaultCallTimeout; negative fails New.
	CallTimeout time.Duration
	// Logger receives the registrations and the calls' failures. Nil:
	// discarded.
	Logger *slog.Logger
	// Dialer connects to the plugins' endpoints. Nil: DialUnix. The
	// Registry keeps a connection to each plugin and reads its health
	// stream for as long as it is registered; a test inside a
	// testing/synctest bubble, where a goroutine reading a socket is never
	// durably blocked, gives one whose connections live in the bubble
	// (dratest's in-memory plugins, dratest.Dialer).
	Dialer Dialer
	// Clock times the devices' health reports, the retries of the
	// health streams, the wipes of ResourceSlices and their retries, and
	// what Metrics observe. Nil: the real clock.
	Clock clock.Clock
	// Metrics receives the durations of PrepareResources and
	// UnprepareResources and of the calls to the plugins. Nil: none are
	// taken.
	Metrics Metrics
	// Slices deletes the node's ResourceSlices on the API server: those of
	// a driver that has had no connected plugin for WipingDelay, and all
	// of them when the caller runs Registry.WipeAll at start, as upstream's
	// kubelet. Nil: none are deleted.
	Slices ResourceSlices
	// WipingDelay is how long a driver may have no connected plugin before
	// its ResourceSlices are deleted, on Clock. Zero: DefaultWipingDelay;
	// negative fails New.
	WipingDelay time.Duration
}

// ErrInvalidOptions is wrapped by New for Options it cannot use.
var ErrInvalidOptions = errors.New("invalid options")

// Manager prepares and unprepares the resource claims of pods and gives
// their containers the CDI devices of the claims they use (see the
// package doc).
type Manager struct {
	claims   Claims
	registry *Registry
	stateDir string
	log      *slog.Logger
	clock    clock.Clock
	metrics  Metrics
	health   healthCache

	mu      sync.Mutex
	loaded  bool                  // the checkpoint has been read
	loadErr error                 // why it could not be
	cache   map[string]*claimInfo // by namespace/name
}

// New returns a Manager with an empty Registry. It touches no disk: the
// checkpoint is read at the first call that needs it.
func New(opts Options) (*Manager, error) {
	if opts.StateDir != "" && !filepath.IsAbs(opts.StateDir) {
		return nil, fmt.Errorf("dra: state directory %q is not absolute: %w", opts.StateDir, ErrInvalidOptions)
	}
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("dra: call timeout %s: %w", opts.CallTimeout, ErrInvalidOptions)
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.WipingDelay < 0 {
		return nil, fmt.Errorf("dra: wiping delay %s: %w", opts.WipingDelay, ErrInvalidOptions)
	}
	if opts.WipingDelay == 0 {
		opts.WipingDelay = DefaultWipingDelay
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Dialer == nil {
		opts.Dialer = DialUnix
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	m := &Manager{claims: opts.Claims, stateDir: opts.StateDir, log: log, clock: opts.Clock, metrics: opts.Metrics,
		cache: map[string]*claimInfo{}, health: healthCache{changed: map[types.UID]struct{}{}}}
	ctx, cancel := context.WithCancel(context.Background())
	m.registry = &Registry{timeout: opts.CallTimeout, log: log, dial: opts.Dialer, clock: opts.Clock, metrics: opts.Metrics,
		watch: m.watchHealth, slices: opts.Slices, wipingDelay: opts.WipingDelay, ctx: ctx, cancel: cancel,
		plugins: map[string][]*plugin{}, pending: map[string]*pendingWipe{}}
	return m, nil
}

// Registry is the Manager's registry of DRA plugins: the Handler to give
// package pluginmanager for plugin type DRAPlugin.
func (m *Manager) Registry() *Registry { return m.registry }

// PrepareResources checks and prepares what pod's resource claims give it,
// before its sandbox is created, as upstream's DRA manager does; nil means
// the pod may run. An error says why it may not yet, with upstream's
// message, prefixed "prepare dynamic resources: ": the caller holds the pod
// and tries again at its next sync.
//
// The claims are checked first, in the pod's order, and a claim's drivers
// in the order of its allocation's results (upstream goes through them in
// a map's order, so which of two unregistered drivers it names varies);
// nothing is recorded unless every check holds. Then each claim is recorded
// as used by the pod (and checkpointed), and the claims not yet prepared
// are prepared, one NodePrepareResources call per driver with all of the
// pod's claims of that driver, drivers in the order first met. A claim
// already prepared (for this pod's earlier sandbox or another pod) is not
// prepared again. Each call is timed for Options.Metrics.
func (m *Manager) PrepareResources(ctx context.Context, pod *v1.Pod) error {
	start := m.clock.Now()
	err := m.prepare(ctx, pod)
	m.observe(OpPrepareResources, start, err)
	if err != nil {
		return fmt.Errorf("prepare dynamic resources: %w", err)
	}
	return nil
}

// checked is a claim of the pod that passed the checks.
type checked struct {
	claim   *resourcev1.ResourceClaim
	drivers []string           // of its allocation's results, each once
	plugins map[string]*plugin // by driver
}

func (m *Manager) prepare(ctx context.Context, pod *v1.Pod) error {
	var claims []checked
	for _, pc := range podClaims(pod) {
		name, ownedByPod, err := claimName(pod, &pc)
		if err != nil {
			return err
		}
		if name == "" {
			continue // the template's claim is not needed
		}
		if m.claims == nil {
			return fmt.Errorf("fetch ResourceClaim %s: %w", name, ErrNoClaims)
		}
		claim, err := m.claims.ResourceClaim(ctx, pod.Namespace, name)
		if err != nil {
			return fmt.Errorf("fetch ResourceClaim %s: %w", name, err)
		}
		if ownedByPod {
			if err := isForPod(pod, claim); err != nil {
				return err
			}
		}
		if !reservedFor(pod, claim) {
			return fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod.Name, pod.UID, name, claim.UID)
		}
		if claim.Status.Allocation == nil {
			return fmt.Errorf("ResourceClaim %s: %w", claim.Name, ErrNotAllocated)
		}
		c := checked{claim: claim, plugins: map[string]*plugin{}}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if c.plugins[r.Driver] != nil {
				continue
			}
			p, err := m.registry.plugin(r.Driver)
			if err != nil {
				return err
			}
			c.plugins[r.Driver] = p
			c.drivers = append(c.drivers, r.Driver)
		}
		claims = append(claims, c)
	}
	if len(claims) == 0 {
		return nil
	}

	batches, toPrepare, err := m.record(pod, claims)
	if err != nil {
		return err
	}
	prepared := map[string]map[string][]Device{} // claim UID, driver
	for _, b := range batches {
		if err := b.prepare(ctx, prepared); err != nil {
			return err
		}
	}
	if len(toPrepare) == 0 {
		return nil
	}
	return m.withCache(func() error {
		for _, c := range toPrepare {
			info := m.cache[key(c.Namespace, c.Name)]
			if info == nil || info.ClaimUID != c.UID {
				return fmt.Errorf("internal error: unable to get claim info for ResourceClaim %s in namespace %s", c.Name, c.Namespace)
			}
			for driver, devices := range prepared[string(c.UID)] {
				info.DriverState[driver] = DriverState{Devices: devices}
			}
			info.prepared = true
		}
		if err := m.checkpoint(); err != nil {
			return fmt.Errorf("checkpoint ResourceClaim state: %w", err)
		}
		return nil
	})
}

// batch is one driver's NodePrepareResources or NodeUnprepareResources
// call.
type batch struct {
	plugin *plugin
	claims []*drav1.Claim
}

// record notes that the pod uses each of its claims and checkpoints it,
// and returns the calls that prepare the claims not yet prepared.
func (m *Manager) record(pod *v1.Pod, claims []checked) ([]*batch, []*resourcev1.ResourceClaim, error) {
	var batches []*batch
	byDriver := map[string]*batch{}
	var toPrepare []*resourcev1.ResourceClaim
	err := m.withCache(func() error {
		for _, c := range claims {
			k := key(c.claim.Namespace, c.claim.Name)
			info := m.cache[k]
			switch {
			case info == nil:
				info = newClaimInfo(c.claim, c.drivers)
				m.cache[k] = info
			case info.ClaimUID != c.claim.UID:
				return fmt.Errorf("old ResourceClaim with same name %s and different UID %s still exists (previous pod force-deleted?!)", c.claim.Name, info.ClaimUID)
			}
			info.PodUIDs[string(pod.UID)] = struct{}{}
			if err := m.checkpoint(); err != nil {
				return fmt.Errorf("checkpoint ResourceClaim cache: %w", err)
			}
			if info.prepared {
				continue
			}
			toPrepare = append(toPrepare, c.claim)
			req := &drav1.Claim{Namespace: info.Namespace, Uid: string(info.ClaimUID), Name: info.ClaimName}
			for _, d := range c.drivers {
				b := byDriver[d]
				if b == nil {
					b = &batch{plugin: c.plugins[d]}
					byDriver[d] = b
					batches = append(batches, b)
				}
				b.claims = append(b.claims, req)
			}
		}
		return nil
	})
	return batches, toPrepare, err
}

// prepare calls NodePrepareResources and adds the devices of each claim to
// prepared, by claim UID and driver, with upstream's errors.
func (b *batch) prepare(ctx context.Context, prepared map[string]map[string][]Device) error {
	resp, err := b.plugin.prepare(ctx, &drav1.NodePrepareResourcesRequest{Claims: b.claims})
	if err != nil {
		return fmt.Errorf("NodePrepareResources: %w", err)
	}
	for _, uid := range slices.Sorted(maps.Keys(resp.GetClaims())) {
		c := lookupClaim(b.claims, uid)
		if c == nil {
			return fmt.Errorf("NodePrepareResources returned result for unknown claim UID %s", uid)
		}
		result := resp.GetClaims()[uid]
		if result.GetError() != "" {
			return fmt.Errorf("NodePrepareResources failed for ResourceClaim %s: %s", c.Name, result.GetError())
		}
		devices := []Device{}
		for _, d := range result.GetDevices() {
			devices = append(devices, Device{PoolName: d.GetPoolName(), DeviceName: d.GetDeviceName(),
				RequestNames: d.GetRequestNames(), CDIDeviceIDs: d.GetCdiDeviceIds()})
		}
		if prepared[uid] == nil {
			prepared[uid] = map[string][]Device{}
		}
		prepared[uid][b.plugin.driver] = devices
	}
	if n := len(b.claims) - len(resp.GetClaims()); n != 0 {
		return fmt.Errorf("NodePrepareResources skipped %d ResourceClaims", n)
	}
	return nil
}

// unprepare calls NodeUnprepareResources, with upstream's errors.
func (b *batch) unprepare(ctx context.Context) error {
	resp, err := b.plugin.unprepare(ctx, &drav1.NodeUnprepareResourcesRequest{Claims: b.claims})
	if err != nil {
		return fmt.Errorf("NodeUnprepareResources: %w", err)
	}
	for _, uid := range slices.Sorted(maps.Keys(resp.GetClaims())) {
		c := lookupClaim(b.claims, uid)
		if c == nil {
			return fmt.Errorf("NodeUnprepareResources returned result for unknown claim UID %s", uid)
		}
		if msg := resp.GetClaims()[uid].GetError(); msg != "" {
			return fmt.Errorf("NodeUnprepareResources failed for ResourceClaim %s: %s", c.Name, msg)
		}
	}
	if n := len(b.claims) - len(resp.GetClaims()); n != 0 {
		return fmt.Errorf("NodeUnprepareResources skipped %d ResourceClaims", n)
	}
	return nil
}

func lookupClaim(claims []*drav1.Claim, uid string) *drav1.Claim {
	for _, c := range claims {
		if c.GetUid() == uid {
			return c
		}
	}
	return nil
}

// UnprepareResources releases the claims the pod used, once its
// containers have stopped and before its final status, as upstream's
// kubelet does when a pod terminates: a claim another pod still uses only
// forgets this pod; the others are unprepared, one NodeUnprepareResources
// call per driver, and forgotten once every call succeeded. An error,
// prefixed "unprepare dynamic resources: ", leaves the claims recorded, so
// that the caller's retry (the pod worker's) unprepares them again; a
// driver with no registered plugin is such an error ("DRA driver NAME is
// not registered"), as upstream's. It may be called again for a pod: a
// pod the Manager prepared nothing for needs nothing.
//
// The claims are the ones recorded for the pod (kept across restarts by
// the checkpoint). Upstream also derives them from the pod's spec when none
// is recorded, but only ever unprepares recorded claims, so that adds only
// its failure for a template's claim never made. Each call is timed for
// Options.Metrics.
func (m *Manager) UnprepareResources(ctx context.Context, pod *v1.Pod) error {
	start := m.clock.Now()
	err := m.unprepare(ctx, pod.UID)
	m.observe(OpUnprepareResources, start, err)
	if err != nil {
		return fmt.Errorf("unprepare dynamic resources: %w", err)
	}
	return nil
}

func (m *Manager) unprepare(ctx context.Context, uid types.UID) error {
	var batches []*batch
	var done []string // cache keys of the claims to forget
	var forgot bool   // a shared claim forgot the pod
	err := m.withCache(func() error {
		byDriver := map[string]*batch{}
		for _, k := range slices.Sorted(maps.Keys(m.cache)) {
			info := m.cache[k]
			if _, ok := info.PodUIDs[string(uid)]; !ok {
				continue
			}
			if len(info.PodUIDs) > 1 {
				delete(info.PodUIDs, string(uid))
				forgot = true
				continue
			}
			done = append(done, k)
			req := &drav1.Claim{Namespace: info.Namespace, Uid: string(info.ClaimUID), Name: info.ClaimName}
			for _, d := range slices.Sorted(maps.Keys(info.DriverState)) {
				if byDriver[d] == nil {
					p, err := m.registry.plugin(d)
					if err != nil {
						return err
					}
					byDriver[d] = &batch{plugin: p}
					batches = append(batches, byDriver[d])
				}
				byDriver[d].claims = append(byDriver[d].claims, req)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, b := range batches {
		if err := b.unprepare(ctx); err != nil {
			return err
		}
	}
	if len(done) == 0 && !forgot {
		return nil
	}
	return m.withCache(func() error {
		for _, k := range done {
			delete(m.cache, k)
		}
		if err := m.checkpoint(); err != nil {
			return fmt.Errorf("checkpoint ResourceClaim state: %w", err)
		}
		return nil
	})
}

// UnprepareInactive unprepares the claims of every recorded pod that
// active does not hold (a pod removed while the node was down, or whose
// termination was never seen), as upstream's reconcile loop does every 60
// seconds once the pod sources are ready. It returns the first failure;
// the others are tried all the same.
func (m *Manager) UnprepareInactive(ctx context.Context, active func(types.UID) bool) error {
	var uids []types.UID
	err := m.withCache(func() error {
		seen := map[string]bool{}
		for _, info := range m.cache {
			for uid := range info.PodUIDs {
				if !seen[uid] && !active(types.UID(uid)) {
					seen[uid] = true
					uids = append(uids, types.UID(uid))
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(uids)
	var first error
	for _, uid := range uids {
		if err := m.unprepare(ctx, uid); err != nil {
			m.log.Info("Unpreparing the resources of an inactive pod failed, will retry", "podUID", uid, "err", err)
			if first == nil {
				first = fmt.Errorf("unprepare dynamic resources of pod %s: %w", uid, err)
			}
		}
	}
	return first
}

// podClaims are the pod's resource claims, with the claim the scheduler
// made for its DRA-backed extended resources last (upstream's
// DRAExtendedResource, beta and on by default since 1.36).
func podClaims(pod *v1.Pod) []v1.PodResourceClaim {
	ext := pod.Status.ExtendedResourceClaimStatus
	if ext == nil {
		return pod.Spec.ResourceClaims
	}
	out := make([]v1.PodResourceClaim, 0, len(pod.Spec.ResourceClaims)+1)
	out = append(out, pod.Spec.ResourceClaims...)
	return append(out, v1.PodResourceClaim{ResourceClaimName: &ext.ResourceClaimName})
}

// claimName is the name of the ResourceClaim pc stands for, and whether
// the claim must be owned by the pod (one made from a template); "" when a
// template needs no claim.
func claimName(pod *v1.Pod, pc *v1.PodResourceClaim) (string, bool, error) {
	switch {
	case pc.ResourceClaimName != nil:
		return *pc.ResourceClaimName, false, nil
	case pc.ResourceClaimTemplateName != nil:
		for _, st := range pod.Status.ResourceClaimStatuses {
			if st.Name == pc.Name {
				if st.ResourceClaimName == nil {
					return "", false, nil
				}
				return *st.ResourceClaimName, true, nil
			}
		}
		return "", false, fmt.Errorf("pod %q: %w", pod.Namespace+"/"+pod.Name, ErrClaimNotCreated)
	}
	return "", false, fmt.Errorf("pod %q, spec.resourceClaim %q: %w", pod.Namespace+"/"+pod.Name, pc.Name, ErrUnsupportedClaim)
}

// isForPod checks that a claim made from a template is the pod's own.
func isForPod(pod *v1.Pod, claim *resourcev1.ResourceClaim) error {
	if claim.Namespace != pod.Namespace {
		return fmt.Errorf("ResourceClaim %s/%s is not in the same namespace as Pod %s/%s", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	if !metav1.IsControlledBy(claim, pod) {
		return fmt.Errorf("ResourceClaim %s/%s was not created for Pod %s/%s (Pod is not owner)", claim.Namespace, claim.Name, pod.Namespace, pod.Name)
	}
	return nil
}

// reservedFor reports whether the claim is reserved for the pod.
func reservedFor(pod *v1.Pod, claim *resourcev1.ResourceClaim) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.UID == pod.UID {
			return true
		}
	}
	return false
}
