package main

import (
	"fmt"
	"log/slog"

	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

// imageCredentials are the node's image credential provider plugins of
// --image-credential-provider-config and --image-credential-provider-bin-dir
// (credentialprovider.Load: neither given, none; one without the other, a
// bad configuration or a missing plugin stops the start, as upstream's).
func imageCredentials(c *config, log *slog.Logger) (podsync.Credentials, error) {
	p, err := credentialprovider.Load(c.credentialConfig, credentialprovider.Options{BinDir: c.credentialBinDir,
		Logger: log.With("component", "credentialprovider")})
	if err != nil {
		return nil, fmt.Errorf("--image-credential-provider-config=%q --image-credential-provider-bin-dir=%q: %w", c.credentialConfig, c.credentialBinDir, err)
	}
	if p == nil {
		return nil, nil // no typed nil in the interface
	}
	return p, nil
}
