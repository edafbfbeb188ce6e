package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// openLocalState opens the node's local state of --local-state (default
// ROOT-DIR/localstate.db), or none when the flag is set to "". Its
// secrets and tokens are sealed with the key of --local-state-key-file,
// or not kept. A damaged file is moved aside and logged by the store, and
// an event recorded by Joined.Run.
func openLocalState(c *config, log *slog.Logger) (*localstate.State, error) {
	path := c.localStatePath
	if !c.set["local-state"] {
		path = filepath.Join(c.rootDir, "localstate.db")
	}
	if path == "" {
		if c.localStateKeyFile != "" {
			return nil, errors.New(`--local-state-key-file with --local-state "": there is no local state to seal`)
		}
		return nil, nil
	}
	var key localstate.SecretKey
	if c.localStateKeyFile != "" {
		var err error
		if key, err = localstate.ReadSecretKeyFile(c.localStateKeyFile); err != nil {
			return nil, fmt.Errorf("--local-state-key-file: %w", err)
		}
	}
	store, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: key, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--local-state: %w", err)
	}
	c.localState = store
	return localstate.New(store)
}
