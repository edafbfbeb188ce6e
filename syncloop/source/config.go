package source

import (
	"context"
	"log/slog"
	"sync"

	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// UpdatesBuffer is the capacity of the Updates channel (upstream's 50).
const UpdatesBuffer = 50

// ConfigOptions configure a Config. Every field is optional.
type ConfigOptions struct {
	// Logger receives the merger's logs; nil discards them.
	Logger *slog.Logger
	// Recorder receives a Warning FailedValidation event for every pod the
	// merger refuses; nil means none.
	Recorder EventRecorder
	// NodeName is the node's name, for log lines; it changes nothing else.
	NodeName string
	// Clock stamps the kubernetes.io/config.seen annotation; nil means the
	// real clock.
	Clock clock.PassiveClock
}

// Config merges the pod sources into one stream of incremental updates:
// upstream's PodConfig in PodConfigNotificationIncremental mode. Each source
// gets a channel (Channel) to send its messages on; the merged updates come
// out of Updates. The merge rules are Merger's.
//
// A Config is safe for concurrent use. Messages are merged one at a time, in
// the order they are received, and the updates of one message are delivered
// together and in order before the next message is merged.
type Config struct {
	log     *slog.Logger
	updates chan syncloop.PodUpdate

	// turn serializes merging and delivering (a lock of capacity one that
	// a waiter can give up when its context ends); it is held while an
	// update waits for room in updates.
	turn   chan struct{}
	merger *Merger

	mu      sync.Mutex // guards sources and seen, never held while blocked
	sources map[string]chan syncloop.PodUpdate
	seen    map[string]bool

	wg sync.WaitGroup
}

// NewConfig returns a Config with no source. It starts nothing: each call of
// Channel starts the goroutine that reads that source.
func NewConfig(opts ConfigOptions) *Config {
	log := orDiscard(opts.Logger)
	if opts.NodeName != "" {
		log = log.With("node", opts.NodeName)
	}
	return &Config{
		log:     log,
		updates: make(chan syncloop.PodUpdate, UpdatesBuffer),
		turn:    make(chan struct{}, 1),
		merger:  NewMerger(MergerOptions{Recorder: opts.Recorder, Logger: log, Clock: opts.Clock}),
		sources: map[string]chan syncloop.PodUpdate{},
		seen:    map[string]bool{},
	}
}

// Channel registers source and returns the channel it sends its messages
// on: SET with its complete list of pods, or ADD, UPDATE, DELETE, REMOVE and
// RECONCILE with some of them (see Merger for what each does). The message's
// Source field is ignored: every message on this channel is source's.
//
// The channel is unbuffered, read by a goroutine that Channel starts and that
// ends when ctx ends; a sender should select on its own context too. Once
// ctx has ended, a message being delivered is dropped (the merger has taken
// it in, the consumer will not see it) and nothing more is read. Calling
// Channel again with the same source returns the same channel, and ctx is
// then ignored. Wait waits for the goroutines.
func (c *Config) Channel(ctx context.Context, source string) chan<- syncloop.PodUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.sources[source]; ok {
		return ch
	}
	ch := make(chan syncloop.PodUpdate)
	c.sources[source] = ch
	c.wg.Go(func() { c.listen(ctx, source, ch) })
	return ch
}

// Updates returns the merged stream: ADD, UPDATE, DELETE, REMOVE and
// RECONCILE, never SET and never an update without pods, each naming its
// source. It is buffered (UpdatesBuffer, 50); when it is full, merging waits
// for the consumer (and so do the sources, on their channels), until the
// context of the source being merged ends. It is never closed.
func (c *Config) Updates() <-chan syncloop.PodUpdate { return c.updates }

// SeenAllSources reports whether every source in expected and every source
// registered with Channel has sent a SET: upstream's "all sources ready",
// which a kubelet waits for before it removes what no source asks for.
// syncloop.SourceAll in expected stands for the registered sources, which
// are always included. With no source expected or registered it is true.
func (c *Config) SeenAllSources(expected ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range expected {
		if s != syncloop.SourceAll && !c.seen[s] {
			return false
		}
	}
	for s := range c.sources {
		if !c.seen[s] {
			return false
		}
	}
	return true
}

// Wait blocks until the goroutines of every Channel have ended, that is
// until their contexts have ended and the message each was delivering, if
// any, was delivered or dropped.
func (c *Config) Wait() { c.wg.Wait() }

func (c *Config) listen(ctx context.Context, source string, ch <-chan syncloop.PodUpdate) {
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-ch:
			c.merge(ctx, source, u)
		}
	}
}

// Merge merges one message of source and delivers its updates, as if it had
// come on source's channel; it returns when they are delivered, or when ctx
// ends (then the message, or the rest of its updates, is dropped). It does
// not register source (SeenAllSources still counts a SET from it).
func (c *Config) Merge(ctx context.Context, source string, u syncloop.PodUpdate) {
	c.merge(ctx, source, u)
}

func (c *Config) merge(ctx context.Context, source string, u syncloop.PodUpdate) {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		c.log.Debug("context ended, dropping a message", "source", source, "op", u.Op.String())
		return
	}
	defer func() { <-c.turn }()
	out := c.merger.Merge(source, u)
	if u.Op == syncloop.OpSet {
		c.mu.Lock()
		c.seen[source] = true
		c.mu.Unlock()
	}
	for i, up := range out {
		c.log.Debug("pod update", "op", up.Op.String(), "source", source, "pods", len(up.Pods))
		select {
		case c.updates <- up:
		case <-ctx.Done():
			c.log.Debug("context ended, dropping updates", "source", source, "dropped", len(out)-i)
			return
		}
	}
}
