package main

import "embed"

// manifestsFS holds the example static pods, which minikubelet runs when
// no source is given and manifests/ is not on disk: a web server with
// probes, a pod with init containers, a crash loop and a one-shot job.
//
//go:embed manifests/*.yaml
var manifestsFS embed.FS
