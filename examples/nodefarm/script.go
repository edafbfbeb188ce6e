package nodefarm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// Script is what a node's fake runtime does beyond running every container
// until it is stopped. The zero value scripts nothing.
type Script struct {
	// CrashRatio is the fraction of started containers, in [0, 1], that
	// crash: they exit with code 1 (reason "Error", as a runtime reports a
	// process that failed) CrashAfter after they started. Which ones is
	// drawn per start, so a restarted container may crash again or not.
	CrashRatio float64
	// CrashAfter is how long a crashing container runs; 0 means 10s.
	CrashAfter time.Duration
	// PullLatency is how long every image pull takes, on the node's clock.
	PullLatency time.Duration
	// Rules and ExecRules are the fake runtime's own scripts
	// (fake.Options.Rules and ExecRules), for containers and probes.
	Rules     []fake.Rule
	ExecRules []fake.ExecRule
}

// DefaultCrashAfter is Script.CrashAfter's default.
const DefaultCrashAfter = 10 * time.Second

// validate checks the script's numbers.
func (s Script) validate() error {
	if s.CrashRatio < 0 || s.CrashRatio > 1 {
		return fmt.Errorf("crash ratio %g is not in [0, 1]: %w", s.CrashRatio, ErrInvalidOptions)
	}
	if s.CrashAfter < 0 || s.PullLatency < 0 {
		return fmt.Errorf("crash after %s, pull latency %s: negative: %w", s.CrashAfter, s.PullLatency, ErrInvalidOptions)
	}
	return nil
}

// scriptedRuntime is a node's fake runtime with its Script: pulls that take
// PullLatency, and containers that crash at CrashRatio.
type scriptedRuntime struct {
	*fake.Runtime
	clock  clock.WithDelayedExecution
	script Script
	after  time.Duration

	mu  sync.Mutex
	rnd *rand.Rand
}

var _ agent.FullRuntime = (*scriptedRuntime)(nil)

// newRuntime returns node i's fake runtime on clk, following s.
func newRuntime(i int, clk clock.WithDelayedExecution, s Script) *scriptedRuntime {
	rt := &scriptedRuntime{
		Runtime: fake.New(fake.Options{Clock: clk, Rules: s.Rules, ExecRules: s.ExecRules,
			// A scale run makes millions of calls; nobody reads them.
			CallHistory: -1}),
		clock: clk, script: s, after: s.CrashAfter,
		rnd: rand.New(rand.NewPCG(uint64(i), 0x6e6f64656661726d)),
	}
	if rt.after == 0 {
		rt.after = DefaultCrashAfter
	}
	return rt
}

// PullImage pulls as the fake does, after the script's latency.
func (r *scriptedRuntime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	if d := r.script.PullLatency; d > 0 {
		t := r.clock.NewTimer(d)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("pull image %s: %w", image.GetImage(), ctx.Err())
		}
	}
	return r.Runtime.PullImage(ctx, image, auth, sandbox)
}

// StartContainer starts the container as the fake does and, for the
// crashing fraction, schedules its crash.
func (r *scriptedRuntime) StartContainer(ctx context.Context, id string) error {
	if err := r.Runtime.StartContainer(ctx, id); err != nil {
		return err
	}
	if r.script.CrashRatio == 0 {
		return nil
	}
	if r.crash() {
		// A runtime timer until it fires. The exit reads the clock, which a
		// fake clock holds locked while it runs its timers: hence the
		// goroutine. A container already gone by then (stopped, removed)
		// is no error worth reporting.
		r.clock.AfterFunc(r.after, func() { go func() { _ = r.Runtime.ExitContainer(id, 1, "Error") }() })
	}
	return nil
}

// crash draws whether a container that starts crashes.
func (r *scriptedRuntime) crash() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rnd.Float64() < r.script.CrashRatio
}
