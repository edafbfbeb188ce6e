package main

import (
	"fmt"
	"log/slog"

	"github.com/kubeletkit/kubeletkit/cri/credentialprovider"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// imageCredentials are the node's image credential provider plugins of
// --image-credential-provider-config and --image-credential-provider-bin-dir
// (credentialprovider.Load: neither given, none; one without the other, a
// bad configuration or a missing plugin stops the start, as upstream's).
// Joined to an API server (joined not nil), plugins with tokenAttributes
// get the pods' service account tokens through it; standalone, such a
// plugin stops the start (credentialprovider.ErrNoServiceAccounts).
func imageCredentials(c *config, joined *apiserver.Joined, log *slog.Logger) (podsync.Credentials, error) {
	opts := credentialprovider.Options{BinDir: c.credentialBinDir, Logger: log.With("component", "credentialprovider")}
	if joined != nil {
		opts.ServiceAccounts = joined.ServiceAccounts()
	}
	p, err := credentialprovider.Load(c.credentialConfig, opts)
	if err != nil {
		return nil, fmt.Errorf("--image-credential-provider-config=%q --image-credential-provider-bin-dir=%q: %w", c.credentialConfig, c.credentialBinDir, err)
	}
	if p == nil {
		return nil, nil // no typed nil in the interface
	}
	return p, nil
}
