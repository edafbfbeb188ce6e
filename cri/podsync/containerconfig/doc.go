// Package containerconfig builds the CRI configs a kubelet hands its
// runtime: a pod's PodSandboxConfig and each container's ContainerConfig,
// as upstream's kuberuntime builds them. It decides nothing about when a
// sandbox or a container is created (package podsync does, and calls it)
// and creates nothing in a runtime (it asks Options.Images, at most, for
// an image's user): a program that runs pods its own way (a
// virtual-kubelet provider, a test, a tool that prints what a node would
// run) gets the same configs from it alone.
//
// # Use
//
// A Builder is made once per node from Options, every field optional:
//
//	b, err := containerconfig.New(containerconfig.Options{
//		ConfigMaps: sources, Secrets: sources, // envFrom, configMapKeyRef, secretKeyRef
//		Images:     rt,                        // the runAsNonRoot check of an image's user
//		Volumes:    volumes,                   // volume.Manager, or a VolumeHostPathsFunc; fileKeyRef
//		NodeName:   "node-1", HostIPs: []string{"192.0.2.10"},
//		ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local",
//		ResolvConf: dns.DefaultResolvConf, Recorder: rec, // the host's resolver; DNS events
//		LogRoot:    "/var/log/pods", PodsDir: "/var/lib/kubelet/pods",
//	})
//	...
//	sb, err := b.SandboxConfig(pod, attempt)
//	handler, err := b.RuntimeHandler(pod)      // for RunPodSandbox
//	id, err := rt.RunPodSandbox(ctx, sb, handler)
//	cfg, err := b.ContainerConfig(ctx, pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular,
//		restartCount, podIPs, imageRef, imageVolumes) // imageVolumes: nil without image volumes
//	id, err = rt.CreateContainer(ctx, sandboxID, cfg, sb)
//	...
//	b.RemovePod(pod.UID) // once the pod is gone: frees its user namespace's IDs
//
// New refuses what it cannot use (a host or DNS address that is not an IP
// address, a cluster domain with white space), wrapping ErrInvalidOptions.
//
// # What a config holds
//
// A sandbox config has the pod's metadata and attempt, its hostname
// (spec.hostnameOverride, with no domain, when set; else spec.hostname or
// the pod's name, its FQDN with setHostnameAsFQDN; none on the host's
// network), its log
// directory (LogDirectory), its DNS config (below), port mappings of host
// ports, sysctls, the cgroup parent (Options.Cgroups), the identity labels of
// package cri with the pod's own labels and annotations, and the sandbox's
// security context: namespaces, users and groups, SELinux, privileged when
// any container is, and RuntimeDefault seccomp whatever the pod asks.
//
// The DNS config is upstream's, decided by package dns from the pod's
// dnsPolicy and dnsConfig, Options.ClusterDNS and ClusterDomain, and the
// host's resolv.conf at Options.ResolvConf, read anew for each sandbox
// config: the cluster's servers and search paths (then the host's) for
// ClusterFirst, the host's for Default (and ClusterFirst on the host's
// network, or on a node without ClusterDNS), the pod's dnsConfig alone for
// None; cut to upstream's limits. Its events (DNSConfigForming,
// MissingClusterDNS) go to Options.Recorder.
//
// A container config has its name and attempt (the restart count), image,
// command and args with $(VAR) expanded, environment (the service
// variables of ServiceEnv, envFrom, env with the downward API,
// configMap and secret keys, and keys of env files in the pod's emptyDirs:
// fileKeyRef, read through an os.Root of the volume's host directory),
// working dir, mounts (volumes with subPaths, image volumes as the
// runtime's mounts of the images the caller pulled (ImageVolumes),
// the termination message file and the pod's /etc/hosts under
// Options.PodsDir), its log path <name>/<restartCount>.log, CPU and memory
// (Resources, OOMScoreAdj, swap), the labels and annotations that let a
// restarted kubelet adopt it (spec hash HashContainer, restart count,
// grace periods, preStop hook, ports), the whole security context (the
// container's fields over the pod's; seccomp with Localhost profiles under
// Options.SeccompProfileRoot; AppArmor; capabilities; masked /proc paths;
// a user namespace of the pod's own for hostUsers: false where
// Options.UserNamespaces says the handler supports one; runAsNonRoot
// verified), the devices Options.Devices adds, and the CDI devices of its
// resource claims (Options.ClaimDevices, a dra.Manager) in CDIDevices.
//
// # Errors
//
// An error of ContainerConfig is a container that cannot be created as its
// spec asks: upstream's kubelet shows it as CreateContainerConfigError.
// Where upstream shows other words than the error's whole text (a missing
// configMap key, a subPath that escapes its volume), an error in its chain
// has a StatusMessage() string method, found with errors.As. An error of
// SandboxConfig (a user namespace the handler cannot give, an FQDN too
// long, a cgroup parent that cannot be had, a resolv.conf that cannot be
// read) is the pod's FailedCreatePodSandBox.
//
// # Threading and state
//
// New starts nothing and touches no disk. A Builder's methods are safe for
// concurrent use; calls for one pod are to be serialized (a pod worker
// does), as ContainerConfig writes the pod's files under PodsDir. What a
// Builder keeps is the host ID ranges of pods' user namespaces, recorded
// under PodsDir so that a restarted node gives a pod the same IDs: a node
// has one Builder, and a podsync.Syncer's is its Config.
//
// # Fakes
//
// cri/fake's *fake.Runtime is an Images; volume.StaticSources holds
// configMaps and secrets; VolumeHostPathsFunc, ServiceListerFunc,
// RuntimeClassesFunc and ImageStatusFunc make the other sources one-liners.
package containerconfig
