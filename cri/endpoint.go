package cri

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// SocketPath returns the filesystem path of a CRI endpoint given as
// "unix:///path/to/socket" or as a bare absolute path. Other schemes (tcp://,
// npipe://) are rejected: the kubelet talks to its runtime over a local unix
// socket.
func SocketPath(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("empty CRI endpoint: want unix:///path/to/socket or an absolute path")
	}
	path := endpoint
	if scheme, rest, ok := strings.Cut(endpoint, "://"); ok {
		if scheme != "unix" {
			return "", fmt.Errorf("CRI endpoint %q: unsupported scheme %q, only unix sockets are supported", endpoint, scheme)
		}
		path = rest
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("CRI endpoint %q: socket path %q is not absolute", endpoint, path)
	}
	return filepath.Clean(path), nil
}
