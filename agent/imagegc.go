package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/imagegc"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// newImageGC builds the image garbage collector over the runtime; its
// periodic collection measures the image filesystem through the agent's
// stats provider, and there is none without one.
func (b *blocks) newImageGC() (*imagegc.Manager, error) {
	var fs imagegc.FsStats
	if p := b.stats; p != nil {
		fs = func(ctx context.Context) (uint64, uint64, error) { return imageFs(ctx, p) }
	}
	var afterFree func(context.Context, []string, time.Time)
	if r := b.pullRecords; r != nil {
		afterFree = r.Prune
	}
	m, err := imagegc.New(imagegc.Options{
		Runtime:  b.rt,
		Clock:    b.clock,
		Fs:       fs,
		Policy:   b.opts.ImageGC,
		Period:   b.opts.Timings.ImageGC,
		Recorder: b.events,
		NodeRef:  &v1.ObjectReference{Kind: "Node", Name: b.opts.NodeName},
		Logger:   b.log.With("component", "image-gc"),
		// The records of the images removed are forgotten.
		AfterFree: afterFree,
	})
	if err != nil {
		return nil, fmt.Errorf("image GC: %w", err)
	}
	return m, nil
}

// imageFs is the image filesystem's capacity and available bytes.
func imageFs(ctx context.Context, p stats.Provider) (uint64, uint64, error) {
	s, err := p.Get(ctx)
	if err != nil {
		return 0, 0, err
	}
	if s.Node.ImageFs == nil {
		return 0, 0, errors.New("the stats have no image filesystem")
	}
	return s.Node.ImageFs.CapacityBytes, s.Node.ImageFs.AvailableBytes, nil
}
