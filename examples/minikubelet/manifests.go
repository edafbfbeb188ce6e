package main

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// manifestsFS holds the example static pods, which minikubelet runs when
// no source is given and manifests/ is not on disk: a web server with
// probes, a pod with init containers, a crash loop and a one-shot job.
//
//go:embed manifests/*.yaml
var manifestsFS embed.FS

// defaultManifests is where the example static pods are, relative to the
// repository's root.
var defaultManifests = filepath.Join("examples", "minikubelet", "manifests")

// manifestPath picks the manifest directory: the configuration's, else
// examples/minikubelet/manifests under the working directory, else the embedded copy
// written under the root dir.
func manifestPath(c *config) (string, error) {
	if c.kc.StaticPodPath != "" || c.kc.StaticPodURL != "" || c.kubeconfig != "" || c.configFile != "" {
		// With an API server or a configuration file, static pods are
		// only those asked for.
		return c.kc.StaticPodPath, nil
	}
	if st, err := os.Stat(defaultManifests); err == nil && st.IsDir() {
		return defaultManifests, nil
	}
	dir := filepath.Join(c.rootDir, "manifests")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	entries, err := fs.ReadDir(manifestsFS, "manifests")
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		data, err := manifestsFS.ReadFile("manifests/" + e.Name())
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o640); err != nil {
			return "", err
		}
	}
	return dir, nil
}
