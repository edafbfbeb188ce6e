// Package prometheus exposes a kubeletkit agent's measurements to
// Prometheus with client_golang, under upstream kubelet's metric names where
// they exist. It lives in the examples module so that the core never
// depends on a metrics library: package agent reports through the small
// agent.Metrics interface, and package server serves /metrics from any
// http.Handler.
//
// # What it exposes
//
// Fed by the agent as things happen (Metrics implements agent.Metrics):
//
//	kubelet_pleg_relist_duration_seconds         histogram
//	kubelet_pleg_relist_interval_seconds         histogram
//	kubelet_pleg_last_seen_seconds               gauge, Unix time of the last relist
//	kubelet_pleg_discard_events                  counter, PLEG events coalesced
//	kubelet_pod_start_duration_seconds           histogram, first seen to Running
//	kubelet_pod_worker_duration_seconds          histogram by operation (sync,
//	                                             terminating, terminating_runtime, terminated)
//	kubeletkit_events_total                      counter by type and reason
//
// Read from the node at scrape time, once RegisterNode has named it:
// kubelet_running_pods, kubelet_running_containers{container_state},
// kubeletkit_pods{phase} and kubeletkit_pleg_healthy.
//
// # Wiring it
//
// The agent takes the Metrics and the Handler; the node's gauges need the
// agent, so they are registered once it is built:
//
//	m, err := prometheus.New(prometheus.Options{})
//	if err != nil { ... }
//	a, err := agent.New(agent.Options{Metrics: m, MetricsHandler: m.Handler(), Listen: ":10255"})
//	if err != nil { ... }
//	if err := m.RegisterNode(a); err != nil { ... }
//	err = a.Run(ctx) // /metrics on :10255
//
// Everything is on the Metrics' own registry (Registry), never on
// client_golang's global one, so two agents in one process, or a test, do
// not collide; Options.Registry shares one with other collectors.
//
// # Threading
//
// New starts no goroutine. The agent.Metrics methods are safe for
// concurrent use and never block. A scrape calls the Node from the request's
// goroutine, bounded by Options.ScrapeTimeout.
//
// # Testing
//
// There is no fake: Metrics is itself cheap to build, and
// client_golang's prometheus/testutil reads values back from Registry.
// A test's Node is a small struct whose Runtime answers ListPodSandbox and
// ListContainers (cri/fake.Runtime does).
package prometheus
