package agent

import (
	"fmt"
	"path/filepath"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// newPullRecords builds the records of which credentials pulled which
// image, under RootDir/image_manager as upstream keeps them; nil with
// Node.PulledImages.Off. Run opens them (runnable "pulled-image-records").
func (b *blocks) newPullRecords() (*pullrecords.Manager, error) {
	o := b.opts.Node.PulledImages
	if o.Off {
		return nil, nil
	}
	m, err := pullrecords.New(pullrecords.Options{
		Dir:       filepath.Join(b.opts.RootDir, pullrecords.DirName),
		Policy:    o.VerificationPolicy,
		Allowlist: o.Allowlist,
		Clock:     b.clock,
		Logger:    b.log.With("component", "pull-records"),
	})
	if err != nil {
		return nil, fmt.Errorf("Node.PulledImages: %w: %w", err, ErrInvalidOptions)
	}
	return m, nil
}
