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
//	kubelet_pod_start_duration_seconds           histogram, first seen to Running (upstream's
//	                                             buckets, 0.5s to 1h)
//	kubelet_pod_worker_duration_seconds          histogram by operation_type (create,
//	                                             update, sync, kill, terminated), from
//	                                             the agent's handling of the update
//	kubeletkit_events_total                      counter by type and reason
//
// Fed by the agent's optional hooks (Metrics implements agent.StartMetrics,
// agent.EvictionMetrics, agent.PodStartMetrics, agent.ImagePullMetrics,
// agent.VolumeMetrics, agent.ResourceMetrics and agent.DRAMetrics),
// under upstream's names, help texts, labels and buckets:
//
//	kubelet_started_pods_total                   counter, sandboxes the agent tried to create
//	kubelet_started_pods_errors_total            counter, those that failed
//	kubelet_started_containers_total             counter by container_type (container,
//	                                             init_container): start attempts, not the
//	                                             syncs a crash-loop back-off held back
//	kubelet_started_containers_errors_total      counter by container_type and code (the
//	                                             waiting reason: ErrImagePull, RunContainerError ...)
//	kubelet_evictions                            counter by eviction_signal (Evicted)
//	kubelet_pod_start_total_duration_seconds     histogram, a pod's creation to every container
//	                                             running (0.5s to 1h)
//	kubelet_pod_start_sli_duration_seconds       histogram, the same less image pulls and init
//	                                             containers' runs, stateful pods left out
//	                                             (package status/startup decides)
//	kubelet_image_pull_duration_seconds          histogram by image_size_in_bytes (0-10MB,
//	                                             10MB-100MB ... GT100GB, N/A: ImageSizeBucket),
//	                                             successful pulls, 1s to 1h
//	storage_operation_duration_seconds           histogram by volume_plugin (kubernetes.io/empty-dir,
//	                                             kubernetes.io/csi:<driver> ...), operation_name
//	                                             (verify_controller_attached_volume, volume_mount,
//	                                             volume_unmount, unmount_device), status (success,
//	                                             fail-unknown), migrated (false); 100ms to 10m
//	volume_manager_total_volumes                 gauge by plugin_name and state
//	                                             (desired_state_of_world, actual_state_of_world),
//	                                             the volume manager's counts at scrape time
//	kubelet_cpu_manager_pinning_requests_total,  counters: containers asking for exclusive CPUs,
//	kubelet_cpu_manager_pinning_errors_total     and those refused (agent.ResourceMetrics)
//	kubelet_cpu_manager_shared_pool_size_millicores,
//	kubelet_cpu_manager_exclusive_cpu_allocation_count,
//	kubelet_cpu_manager_allocation_per_numa      gauges: the static policy's pool, by numa_node
//	kubelet_container_aligned_compute_resources_count,
//	kubelet_container_aligned_compute_resources_failure_count
//	                                             counters by scope and boundary (full-pcpus-only)
//	kubelet_memory_manager_pinning_requests_total,
//	kubelet_memory_manager_pinning_errors_total  counters: containers whose memory Static pins
//	kubelet_topology_manager_admission_requests_total,
//	kubelet_topology_manager_admission_errors_total,
//	kubelet_topology_manager_admission_duration_ms
//	                                             admissions through the topology manager
//	dra_operations_duration_seconds              histogram by operation_name (PrepareResources,
//	                                             UnprepareResources) and is_error: each pod's
//	                                             claims prepared or unprepared, 0.1s to 40s
//	dra_grpc_operations_duration_seconds         histogram by driver_name, method_name (the full
//	                                             gRPC method) and grpc_status_code (OK ...): each
//	                                             call to a DRA plugin, 0.1s to 40s
//	dra_resource_claims_in_use                   gauge by driver_name, "<any>" for all (there at
//	                                             0 when none is): the DRA manager's prepared
//	                                             claims at scrape time
//
// # /metrics/probes
//
// ProbeHandler serves, from a registry of its own (ProbeRegistry) as
// upstream serves them apart from /metrics, what the agent's probe hooks
// report (Metrics implements agent.ProbeMetrics and
// agent.ProbeDurationMetrics):
//
//	prober_probe_total                           counter by probe_type (Liveness, Readiness,
//	                                             Startup), result (successful, failed, unknown),
//	                                             container, pod, namespace, pod_uid
//	prober_probe_duration_seconds                histogram by probe_type, container, pod,
//	                                             namespace: the runs that succeeded or whose
//	                                             result is unknown (not the failures), 5ms to 10s
//	process_start_time_seconds                   gauge (where /proc tells it)
//
// A pod's probe series are deleted once the agent forgets it. Give the
// handler as agent.Options.HTTP.ProbeMetricsHandler.
//
// Fed by the runtime InstrumentRuntime wraps, as upstream's instrumented
// CRI clients, by operation_type (version, run_podsandbox, create_container,
// start_container, list_containers, exec_sync, pull_image, image_status,
// get_container_events ..., one per CRI method):
//
//	kubelet_runtime_operations_total             counter
//	kubelet_runtime_operations_duration_seconds  histogram, 5ms to 745s (x2.5, 14 buckets)
//	kubelet_runtime_operations_errors_total      counter
//
// Read from the node at scrape time, once RegisterNode has named it:
// kubelet_running_pods, kubelet_running_containers{container_state},
// kubeletkit_pods{phase} and kubeletkit_pleg_healthy.
//
// Read from the node's summary at scrape time, once RegisterVolumeStats
// has its server.StatsProvider (the agent's API()), as upstream's volume
// stats collector, by namespace and persistentvolumeclaim, each claim
// once (its first pod's volume):
//
//	kubelet_volume_stats_capacity_bytes, kubelet_volume_stats_available_bytes,
//	kubelet_volume_stats_used_bytes, kubelet_volume_stats_inodes,
//	kubelet_volume_stats_inodes_free, kubelet_volume_stats_inodes_used
//	                                             gauges, the pod volumes with a pvcRef
//
// (kubelet_volume_stats_health_status_abnormal is not served: upstream
// serves it only under its alpha CSIVolumeHealth gate).
//
// # Wiring it
//
// The agent takes the Metrics and the Handler; the node's gauges need the
// agent, so they are registered once it is built:
//
//	m, err := prometheus.New(prometheus.Options{})
//	if err != nil { ... }
//	a, err := agent.New(agent.Options{Metrics: m, HTTP: agent.HTTPOptions{Listen: ":10255",
//		MetricsHandler: m.Handler(), ProbeMetricsHandler: m.ProbeHandler()}})
//	if err != nil { ... }
//	if err := m.RegisterNode(a); err != nil { ... }
//	if err := m.RegisterVolumeStats(a.API()); err != nil { ... }
//	err = a.Run(ctx) // /metrics and /metrics/probes on :10255
//
// The runtime is measured when the agent is given it wrapped:
//
//	a, err := agent.New(agent.Options{Runtime: m.InstrumentRuntime(rt), Metrics: m, ...})
//
// (an agent given no Runtime embeds a fake one it does not expose for
// wrapping, so its runtime goes unmeasured).
//
// # /metrics/resource
//
// NewResourceHandler serves upstream kubelet's resource metrics, the ones
// metrics-server scrapes, from a server.StatsProvider's reduced summary
// (Summary with onlyCPUAndMemory true), through ResourceCollector, a
// client_golang collector on a registry of its own:
//
//	node_cpu_usage_seconds_total, node_memory_working_set_bytes, node_swap_usage_bytes
//	pod_cpu_usage_seconds_total, pod_memory_working_set_bytes, pod_swap_usage_bytes
//	                                             by pod, namespace
//	container_cpu_usage_seconds_total, container_memory_working_set_bytes,
//	container_swap_usage_bytes, container_swap_limit_bytes, container_start_time_seconds
//	                                             by container, pod, namespace
//	resource_scrape_error                        1 when the summary failed (then nothing
//	                                             else is reported), else 0
//
// Each sample is stamped with the time its statistic was taken (the start
// time excepted), as upstream's; CPU is in core-seconds. A statistic the
// summary lacks is left out. The summary is bounded by
// ResourceOptions.Timeout (5s).
//
// # /metrics/cadvisor
//
// NewCadvisorHandler serves upstream kubelet's cAdvisor metrics under
// cAdvisor's names, help texts and types, built from the runtime's CRI
// stats (an UsageProvider: stats.Provider.Usage, or the agent's) rather
// than from cAdvisor's cgroup walk, and from a node.Machine, on a
// registry of its own. CadvisorCollector, by container, id (the runtime's
// container or sandbox ID), image, name (the container ID), namespace and
// pod, the pod's own series with container, image and name empty:
//
//	container_cpu_usage_seconds_total{cpu="total"}, container_memory_usage_bytes,
//	container_memory_working_set_bytes, container_memory_rss,
//	container_memory_failures_total{failure_type,scope}, container_memory_swap,
//	container_fs_usage_bytes{device} (the writable layer), container_start_time_seconds,
//	container_pressure_{cpu,memory,io}_{stalled,waiting}_seconds_total
//	                                             containers; the pod's CPU, memory and
//	                                             pressure from its sandbox stats
//	container_network_{receive,transmit}_{bytes,errors}_total{interface},
//	container_processes                          the pod's, from its sandbox stats
//	container_scrape_error                       1 when the usage failed, else 0
//
// With CadvisorOptions.Cgroups (a CgroupStatsProvider: stats.CgroupReader,
// or the agent's), also what cAdvisor reads of the cgroups and the pods'
// network namespaces, which the CRI stats lack:
//
//	container_cpu_cfs_{periods,throttled_periods,throttled_seconds}_total
//	                                             containers and pods with a CPU quota
//	container_memory_cache,
//	container_fs_{reads,writes}_bytes_total{device}, container_fs_{reads,writes}_total{device},
//	container_blkio_device_usage_total{device,major,minor,operation}
//	                                             containers and pods
//	container_network_{receive,transmit}_packets{,_dropped}_total{interface}
//	                                             the pod's
//
// MachineCollector: machine_cpu_cores, machine_memory_bytes and
// machine_swap_bytes by boot_id, machine_id, system_uuid, and
// machine_scrape_error. A figure the runtime did not give is left out;
// docs/metrics.md lists what cAdvisor serves that this does not.
//
// Everything is on the Metrics' own registries (Registry, and
// ProbeRegistry for the probes), never on client_golang's global one, so
// two agents in one process, or a test, do not collide; Options.Registry
// shares one with other collectors. Help texts are upstream's, with
// component-base's stability prefix ("[ALPHA] ", "[STABLE] "), so that an
// exposition of ours reads as upstream's (hack/metrics-compare checks it).
//
// # Threading
//
// New starts no goroutine. The agent.Metrics methods (and the hooks') are
// safe for concurrent use and never block; an instrumented runtime adds
// only the counting to each call. A scrape calls the Node from the request's
// goroutine, bounded by Options.ScrapeTimeout.
//
// # Testing
//
// There is no fake: Metrics is itself cheap to build, and
// client_golang's prometheus/testutil reads values back from Registry.
// A test's Node is a small struct whose Runtime answers ListPodSandbox and
// ListContainers (cri/fake.Runtime does); a test's server.StatsProvider is
// a function type, and a runtime to instrument embeds agent.FullRuntime and
// overrides the methods the test calls. Options.Clock times the runtime's
// operations on a fake clock.
package prometheus
