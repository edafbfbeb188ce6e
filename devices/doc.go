// Package devices is a kubelet's device manager: the node side of the
// device plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1), with
// upstream kubelet's semantics.
//
// A device plugin (a GPU, FPGA or NIC driver's agent) serves the
// DevicePlugin service on a unix socket in the plugin directory and calls
// Register on the manager's socket there (SocketName). The manager then:
//
//   - asks the plugin for its options; a plugin that cannot answer is
//     refused ("failed to get device plugin options: ...");
//   - follows its ListAndWatch stream: the resource's capacity is the
//     number of devices listed, its allocatable the healthy ones
//     (Resources, which the node's status reports);
//   - when the stream ends, at once or later, makes none of its devices
//     allocatable and never opens it again: the plugin must register anew. After the
//     stop grace period (5 minutes) the resource is reported with a
//     capacity of zero;
//   - at admission (Admit, an admission handler) gives each container the
//     devices its limits ask for, init containers first, a regular init
//     container's devices going on to the containers after it, asking the
//     plugin for a preferred choice when it offers one, and calling its
//     Allocate; a pod that cannot get its devices is refused with
//     UnexpectedAdmissionError, as upstream refuses it;
//   - with a topology manager, is its hint provider instead, as upstream's:
//     ContainerHints and PodHints hint the NUMA nodes whose free devices
//     satisfy a request, and Allocate, which the topology manager calls for
//     each container after merging the hints, takes the devices from the
//     container's affinity (Options.Affinity) first. Call Prepare before
//     the topology manager admits a pod (it releases the devices of pods no
//     longer active) and RemovePod when it refuses one;
//   - when a container is created (ApplyDevices, the hook of
//     containerconfig.Options.Devices) adds the plugin's answer to the
//     container's CRI config: environment, mounts, device nodes, CDI
//     devices, annotations; and calls PreStartContainer first when the
//     plugin asks for it;
//   - reports the health of each container's devices in its status
//     (UpdateAllocatedResourcesStatus, allocatedResourcesStatus), and which
//     pods' statuses are due when a device's health changes
//     (TakeHealthChanges);
//   - keeps the allocations and registered resources in a checkpoint in
//     the plugin directory, so that a restarted node gives running pods the
//     same devices and never gives them to another pod.
//
// Two things differ from upstream on purpose: the endpoint a plugin
// registers must name a socket in the plugin directory (upstream joins any
// path), and every call to a plugin but ListAndWatch is bounded
// (Options.RPCTimeout), so a hung plugin delays one admission rather than
// the node.
//
// Run serves registrations until its context ends and returns once every
// goroutine it started has ended. Listen, which Run calls when it has not
// been called, restores the checkpoint first: call it before admitting
// pods. Every method is safe for concurrent use; Admit, Prepare and
// Allocate calls are serialized.
//
// Package devicestest has a device plugin for tests that registers with
// this manager or with upstream kubelet, changes its devices' health on
// demand, fails the calls a test chooses and records every call.
package devices
