// Package agent composes the kubeletkit blocks into a node agent: the one
// examples/minikubelet runs, and a starting point for a custom one.
//
// The parts and how a pod flows through them:
//
//	syncloop/source (file dir, URL) ─► source.Config ─► syncloop.Loop ─► Agent (SyncHandler)
//	    ─► podworkers.Workers ─► Agent (podworkers.Syncer):
//	        SyncPod:            pleg cache ─► status.Generate ─► status.Manager
//	                            ─► cri/podsync.Syncer.SyncPod ─► CRI runtime
//	        SyncTerminatingPod: podsync KillPod, final status
//	        SyncTerminatedPod:  status TerminatePod
//	pleg.Generic ─► events ─► syncloop;  prober.Manager ─► results ─► syncloop, status
//	eviction.Manager ─► Workers.KillPod (one pod per pass), admission, node pressure
//	status/node.Controller ─► /node (conditions, capacity, addresses)
//
// The Agent implements syncloop.SyncHandler, podworkers.Syncer and the
// blocks' EventRecorder (events are logged and counted in /metrics). Its
// status sink keeps statuses in memory, as a standalone agent has no API
// server (a static pod stands for its own mirror pod), and prints a line per
// change. Pods come from a manifest directory, a URL, and Options.APIUpdates,
// the channel an API-server adapter feeds.
//
//	a, err := agent.New(agent.Options{ManifestPath: "examples/minikubelet/manifests", Listen: "127.0.0.1:10255", Out: os.Stdout})
//	if err != nil { ... }
//	err = a.Run(ctx) // until ctx ends; containers are left running
//
// Options.Timings shortens upstream's periods (relist, backoffs, resync),
// which is how the end-to-end tests watch a crash loop in seconds.
package agent
