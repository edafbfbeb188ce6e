// Package podresources is the kubelet's pod-resources API: the gRPC
// service k8s.io/kubelet/pkg/apis/podresources/v1 (PodResourcesLister:
// List, Get, GetAllocatableResources), with which monitoring agents and
// device plugins learn which devices, exclusive CPUs, pinned memory and
// DRA devices the node gave each container. It follows upstream kubelet
// v1.36.3 (pkg/kubelet/apis/podresources), where KubeletPodResourcesGet
// and KubeletPodResourcesDynamicResources are GA and
// KubeletPodResourcesListUseActivePods is on:
//
//   - List reports the active pods (admitted, not known to have
//     terminated, not in a terminal phase unless still being stopped),
//     sorted by namespace and name;
//   - Get reports one active pod; any other pod gets upstream's error,
//     code Unknown, "pod NAME in namespace NAMESPACE not found";
//   - a pod's containers are its sidecars (restartable init containers)
//     and its containers, in order; a regular init container is left out;
//   - GetAllocatableResources reports every healthy device, held or not,
//     and the CPUs and memory that can be given exclusively;
//   - v1alpha1's List, which upstream still serves beside v1, reports
//     every pod the node holds, active or not, with the devices of its
//     regular containers;
//   - every call, all clients together, is rate-limited to 100 a second
//     with bursts of 10; a call over the limit gets code ResourceExhausted,
//     "rejected by rate limit".
//
// The decisions are pure functions: ReportedContainers, PodResources,
// ContainerDevices, Allocatable, AlphaPodResources, FindPod, NotFound.
//
// What the node knows comes through small interfaces the caller fills:
// Pods (required), and in Sources, Devices (package devices' Manager),
// CPUs, Memory and DynamicResources. A nil source answers as upstream does
// without that manager's state: no CPU manager is upstream's policy
// "none" (no exclusive CPUs, none allocatable), no memory manager its
// policy "None" (no pinned memory, none allocatable), no DRA manager no
// dynamic resources (upstream's answer for a pod without claims).
//
// Driving it:
//
//	s, err := podresources.New(podresources.Options{
//		Dir:     filepath.Join(rootDir, podresources.DirName),
//		Pods:    pods,
//		Sources: podresources.Sources{Devices: deviceManager},
//	})
//	err = s.Listen() // optional: Run listens when it has not
//	err = s.Run(ctx) // serves until ctx ends
//
// Listen makes the directory (0750), removes a stale socket and binds
// Dir/kubelet.sock under a temporary name that it renames into place, as
// upstream does; the socket's mode is the umask's. Run serves until its
// context ends, then stops the gRPC server, waits for the calls under way,
// removes the socket and returns; it starts one goroutine and returns only
// once it has ended. Service answers the same v1 API in process, without
// a socket or the rate limit.
//
// Each device is reported once per NUMA node its plugin listed, with that
// node in its Topology, as upstream reports it. One thing differs from
// upstream: List's order, and the devices' order, are sorted rather than a
// map's.
package podresources
