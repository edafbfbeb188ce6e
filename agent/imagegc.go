package agent

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/imagegc"
)

// newImageGC builds the image garbage collector over the runtime; its
// periodic collection measures the image filesystem through the agent's
// stats provider, and there is none without one.
func (a *Agent) newImageGC() (*imagegc.Manager, error) {
	var fs imagegc.FsStats
	if a.stats != nil {
		fs = a.imageFs
	}
	m, err := imagegc.New(imagegc.Options{
		Runtime:  a.rt,
		Clock:    a.clock,
		Fs:       fs,
		Policy:   a.opts.ImageGC,
		Period:   a.opts.Timings.ImageGC,
		Recorder: a.events,
		NodeRef:  &v1.ObjectReference{Kind: "Node", Name: a.opts.NodeName},
		Logger:   a.log.With("component", "image-gc"),
	})
	if err != nil {
		return nil, fmt.Errorf("image GC: %w", err)
	}
	return m, nil
}

// imageFs is the image filesystem's capacity and available bytes.
func (a *Agent) imageFs(ctx context.Context) (uint64, uint64, error) {
	s, err := a.stats.Get(ctx)
	if err != nil {
		return 0, 0, err
	}
	if s.Node.ImageFs == nil {
		return 0, 0, errors.New("the stats have no image filesystem")
	}
	return s.Node.ImageFs.CapacityBytes, s.Node.ImageFs.AvailableBytes, nil
}
