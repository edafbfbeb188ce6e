package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// cgroupFlags binds the flags of the pods' cgroups to kc, as configFlags
// binds the others.
func cgroupFlags(fs *flag.FlagSet, kc *kubeletv1beta1.KubeletConfiguration) {
	fs.Var(optionalBool{optional[bool]{&kc.CgroupsPerQOS, strconv.ParseBool}}, "cgroups-per-qos", "put pods in upstream's cgroup hierarchy (kubepods, kubepods/burstable, kubepods/besteffort, a cgroup per pod with its CPU and memory limits), which needs root; only the pod cgroups this node made (recorded under ROOT-DIR/cgroups) are ever removed. "+
		"On by default with a real runtime; ignored on the embedded fake runtime; off unless given when the runtime at --container-runtime-endpoint says it is kubeletkit's fake (examples/fakecri), whose containers are no processes")
	fs.Var(value[string]{&kc.CgroupDriver, parseString[string]}, "cgroup-driver", "cgroup driver: cgroupfs, or systemd (slices created over systemd's D-Bus API); the runtime must use the same")
	fs.Var(value[string]{&kc.CgroupRoot, parseString[string]}, "cgroup-root", "cgroup the pods' hierarchy goes under (empty: /)")
	fs.Var(listValue{&kc.EnforceNodeAllocatable}, "enforce-node-allocatable", "pods: limit the kubepods cgroup to the node's allocatable (capacity less --kube-reserved and --system-reserved), else its capacity; none (or empty) enforces nothing; without --config the default is none with --cgroups-per-qos=false")
	fs.Var(optional[int64]{&kc.PodPidsLimit, parseInt64}, "pod-max-pids", "Set the maximum number of processes per pod.  If -1, the kubelet defaults to the node allocatable pid capacity. "+
		"(The pod cgroup's pids limit: it needs --cgroups-per-qos; 0 or negative sets none.)")
	fs.Var(optional[metav1.Duration]{&kc.CPUCFSQuotaPeriod, parseDuration}, "cpu-cfs-quota-period", "Sets CPU CFS quota period value, cpu.cfs_period_us, defaults to Linux Kernel default. "+
		"(The CFS period of containers that limit CPU, and of the pod cgroups with --cgroups-per-qos; 1ms to 1s, default 100ms.)")
	fs.Var(value[string]{&kc.CPUManagerPolicy, parseString[string]}, "cpu-manager-policy", "CPU manager policy: none (default) or static, which gives the containers of Guaranteed pods that request whole CPUs those CPUs exclusively (state in ROOT-DIR/cpu_manager_state; needs --reserved-cpus or a cpu in --kube-reserved/--system-reserved)")
	fs.Var(mapValue{m: &kc.CPUManagerPolicyOptions, op: "="}, "cpu-manager-policy-options", "the static policy's options (key=value,...): full-pcpus-only, strict-cpu-reservation")
	fs.Var(value[metav1.Duration]{&kc.CPUManagerReconcilePeriod, parseDuration}, "cpu-manager-reconcile-period", "how often running containers' cpusets are brought in line with the CPU manager (default 10s)")
	fs.Var(value[string]{&kc.ReservedSystemCPUs, parseString[string]}, "reserved-cpus", "CPUs kept for the system and the node (Linux list syntax, 0-1,4), never given exclusively")
	fs.Var(value[string]{&kc.MemoryManagerPolicy, parseString[string]}, "memory-manager-policy", "memory manager policy: None (default) or Static, which pins the memory and huge pages of Guaranteed pods' containers to NUMA nodes (state in ROOT-DIR/memory_manager_state; needs --reserved-memory)")
	fs.Var(reservedMemoryValue{&kc.ReservedMemory}, "reserved-memory", "memory reserved on a NUMA node, NODE:resource=quantity,... (0:memory=1Gi,hugepages-2Mi=64Mi); repeat the flag, or separate nodes with ';', for several nodes")
	fs.Var(value[string]{&kc.TopologyManagerPolicy, parseString[string]}, "topology-manager-policy", "topology manager policy: none (default), best-effort, restricted or single-numa-node")
	fs.Var(value[string]{&kc.TopologyManagerScope, parseString[string]}, "topology-manager-scope", "topology manager scope: container (default) or pod")
	fs.Var(mapValue{m: &kc.TopologyManagerPolicyOptions, op: "="}, "topology-manager-policy-options", "the topology manager's options (key=value,...): max-allowable-numa-nodes, prefer-closest-numa-nodes")
}

// parseInt64 reads --pod-max-pids.
func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// cgroupOptions adjusts the agent's cgroup options to the runtime. A fake
// runtime's containers are no processes: on the embedded one the pods get
// no cgroups, and on a socket whose runtime says it is kubeletkit's fake
// (CRI Version: examples/fakecri's) --cgroups-per-qos is off unless given,
// and a line says so: an agent on a fake has no business with the host's
// cgroups. On a real runtime, --cgroups-per-qos (upstream's default) needs
// root, and says so.
func cgroupOptions(c *config, opts *agent.Options) error {
	opts.Cgroups.PerQOS = opts.Cgroups.PerQOS && !c.embedded
	if opts.Cgroups.PerQOS && c.runtimeName == fake.DefaultRuntimeName && !c.set["cgroups-per-qos"] {
		opts.Cgroups.PerQOS = false
		opts.Logger.Warn("The runtime is kubeletkit's fake, whose containers are no processes: the pods get no cgroups (--cgroups-per-qos=true makes them)",
			"endpoint", c.kc.ContainerRuntimeEndpoint, "runtime", c.runtimeName)
	}
	if !opts.Cgroups.PerQOS && (c.embedded || !c.set["enforce-node-allocatable"]) {
		opts.Cgroups.EnforceNodeAllocatable = nil
	}
	if opts.Cgroups.PerQOS && os.Geteuid() != 0 {
		return errors.New("--cgroups-per-qos creates the pods' cgroups, which needs root: run as root, or pass --cgroups-per-qos=false")
	}
	return nil
}

// reservedMemoryValue is --reserved-memory, as upstream spells it: each
// value NODE:resource=quantity,..., several nodes in one value separated by
// ';', the flag repeatable.
type reservedMemoryValue struct {
	r *[]kubeletv1beta1.MemoryReservation
}

func (v reservedMemoryValue) String() string {
	if v.r == nil {
		return ""
	}
	var nodes []string
	for _, m := range *v.r {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(m.Limits)) {
			q := m.Limits[name]
			parts = append(parts, string(name)+"="+q.String())
		}
		nodes = append(nodes, strconv.Itoa(int(m.NumaNode))+":"+strings.Join(parts, ","))
	}
	return strings.Join(nodes, ";")
}

func (v reservedMemoryValue) Set(s string) error {
	for _, node := range strings.Split(s, ";") {
		if node == "" {
			continue
		}
		id, list, ok := strings.Cut(node, ":")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 {
			return fmt.Errorf("%q: want NUMA-NODE:resource=quantity,...", node)
		}
		limits := v1.ResourceList{}
		for _, kv := range strings.Split(list, ",") {
			name, val, ok := strings.Cut(kv, "=")
			if !ok || name == "" {
				return fmt.Errorf("%q is not resource=quantity", kv)
			}
			q, err := resource.ParseQuantity(val)
			if err != nil {
				return fmt.Errorf("%s: %w", kv, err)
			}
			limits[v1.ResourceName(name)] = q
		}
		*v.r = append(*v.r, kubeletv1beta1.MemoryReservation{NumaNode: int32(n), Limits: limits})
	}
	return nil
}
