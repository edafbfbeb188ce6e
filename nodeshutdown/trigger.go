package nodeshutdown

import (
	"context"
	"errors"
	"os"
	"os/signal"
)

// Handler is what a Trigger drives; *Manager implements it.
type Handler interface {
	// Shutdown begins the node's shutdown and returns once its pods are
	// terminated or its budget is spent.
	Shutdown(ctx context.Context) error
	// Cancel says a shutdown was called off.
	Cancel()
}

var _ Handler = (*Manager)(nil)

// Trigger tells a Handler when the node is about to shut down: a logind
// inhibitor's PrepareForShutdown, a signal, an init system's hook. Run
// watches until ctx ends and returns only when every goroutine it started
// has ended; an error means it could not watch at all.
type Trigger interface {
	Run(ctx context.Context, h Handler) error
}

// TriggerFunc adapts a function to Trigger.
type TriggerFunc func(ctx context.Context, h Handler) error

// Run calls f.
func (f TriggerFunc) Run(ctx context.Context, h Handler) error { return f(ctx, h) }

var (
	_ Trigger = TriggerFunc(nil)
	_ Trigger = (*Signal)(nil)
)

// Signal is a Trigger for machines without systemd's logind: the first of
// Signals to arrive begins the shutdown (an init that sends SIGTERM to every
// process before it halts, or a dedicated signal sent by a shutdown
// script). While Run watches, those signals no longer have their default
// effect on the process. After the shutdown, Run keeps watching until ctx
// ends; a later signal does nothing more.
type Signal struct {
	// Signals begin the shutdown. Required.
	Signals []os.Signal
}

// Run waits for one of s.Signals, then calls h.Shutdown.
func (s *Signal) Run(ctx context.Context, h Handler) error {
	if len(s.Signals) == 0 {
		return errors.New("node shutdown signal trigger: no signals")
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, s.Signals...)
	defer signal.Stop(ch)
	select {
	case <-ctx.Done():
		return nil
	case <-ch:
	}
	if err := h.Shutdown(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	<-ctx.Done()
	return nil
}
