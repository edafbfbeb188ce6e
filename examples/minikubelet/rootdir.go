package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// freshRootDir names this run's own root directory, under the temporary
// directory, for the embedded fake runtime without --root-dir: that
// runtime's containers live and die with the process, and a root kept from
// an earlier run would hold their logs (which a kubelet counts as restarts,
// as upstream counts them from the log directory) and the checkpoints of
// pods the runtime no longer has. The agent creates it; options keeps the
// agent from mounting under it (agent.SecurityOptions.NoMounts: secrets on
// disk, no tmpfs), so that removeFreshRoot can remove it whole.
func freshRootDir() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("--root-dir: %w", err)
	}
	return filepath.Join(os.TempDir(), "minikubelet-"+hex.EncodeToString(b[:])), nil
}

// removeFreshRoot removes the run's own root directory at exit.
func removeFreshRoot(dir string, stderr io.Writer) {
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(stderr, "minikubelet: %v\n", err)
	}
}
