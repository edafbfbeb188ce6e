// Package kubeletconfig turns upstream's configuration file, a
// KubeletConfiguration of kubelet.config.k8s.io/v1beta1 (the type of
// k8s.io/kubelet/config/v1beta1), into the agent's options, so that any
// agent built on kubeletkit can start from the file kubeadm or kind writes
// to /var/lib/kubelet/config.yaml.
//
// It does what upstream kubelet does with --config and --config-dir, in
// the same order:
//
//	kc, err := kubeletconfig.Load(kubeletconfig.Files{Config: "/var/lib/kubelet/config.yaml",
//		DropInDir: "/etc/kubernetes/kubelet.conf.d"})  // file, defaults, drop-ins
//	// ... the caller's command-line flags over kc, as upstream re-applies them ...
//	if err := kubeletconfig.Validate(kc); err != nil { ... } // upstream's messages
//	cfg, err := kubeletconfig.Convert(kc)                    // refuses what the node lacks
//	a, err := agent.New(cfg.Agent)
//
// Load decodes strictly: YAML or JSON, apiVersion and kind checked, an
// unknown or duplicated field named with the file and its path. Relative
// paths in a file are taken from the file's directory, as upstream does.
// The file is defaulted with upstream's v1beta1 defaults (SetDefaults), and
// then the drop-in directory's files ending in ".conf", walked in lexical
// order, are each merged over the result as a JSON merge patch (RFC 7386):
// a field given replaces the one before, maps merge key by key, lists are
// replaced whole.
//
// Convert maps every field the node implements into agent.Options, and
// the settings that only a client of an API server can honour (the Node's
// registration, taints and provider ID, the API client's rate limits,
// webhook authentication and authorization, certificate rotation) into
// Config.Cluster for the caller (examples/apiserver's Join takes them). Every
// other field is refused when it differs from upstream's default, by its
// JSON name and value, all in one *UnsupportedError; docs/kubeletconfig.md
// lists every field and what the node does with it.
//
// The package is a Go module of its own,
// github.com/kubeletkit/kubeletkit/kubeletconfig: upstream's type imports
// k8s.io/component-base, and with it a metrics library (Prometheus's
// client) and OpenTelemetry, which the core module never depends on. A
// program that reads configuration files requires this module beside the
// core; one that does not links none of it.
//
// The package has no state and starts no goroutine; its functions are safe
// for concurrent use on distinct configurations.
package kubeletconfig
