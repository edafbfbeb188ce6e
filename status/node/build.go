package node

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Reasons and messages of the node conditions (upstream's).
const (
	ReasonKubeletReady    = "KubeletReady"
	ReasonKubeletNotReady = "KubeletNotReady"
	MessageKubeletReady   = "kubelet is posting ready status"

	ReasonSufficientMemory   = "KubeletHasSufficientMemory"
	ReasonInsufficientMemory = "KubeletHasInsufficientMemory"
	ReasonNoDiskPressure     = "KubeletHasNoDiskPressure"
	ReasonDiskPressure       = "KubeletHasDiskPressure"
	ReasonSufficientPID      = "KubeletHasSufficientPID"
	ReasonInsufficientPID    = "KubeletHasInsufficientPID"
)

// Limits of the images list (upstream's).
const (
	// MaxImages is how many images the status lists, largest first.
	MaxImages = 50
	// MaxNamesPerImage is how many names an image has in the list.
	MaxNamesPerImage = 5
)

// Pressure says whether the node is under resource pressure: the eviction
// block's Manager implements it (upstream's method names).
type Pressure interface {
	IsUnderMemoryPressure() bool
	IsUnderDiskPressure() bool
	IsUnderPIDPressure() bool
}

// Input is everything BuildStatus reads: what the providers returned in
// one round, and the last status built.
type Input struct {
	// Capacity is the machine's capacity (cpu, memory, pods, ...).
	Capacity v1.ResourceList
	// Reserved is taken off the capacity to give the allocatable
	// resources: kube-reserved, system-reserved and the hard eviction
	// thresholds, summed by the caller.
	Reserved v1.ResourceList
	// ExtendedCapacity and ExtendedAllocatable are resources whose
	// allocatable is not capacity less a reservation, device plugins'
	// (devices.Manager): they are set as given, over the machine's.
	ExtendedCapacity, ExtendedAllocatable v1.ResourceList
	// SystemInfo is the node's OS information; ContainerRuntimeVersion and
	// KubeletVersion are filled from RuntimeVersion and KubeletVersion.
	SystemInfo v1.NodeSystemInfo
	// KubeletVersion is reported as nodeInfo.kubeletVersion.
	KubeletVersion string
	// RuntimeVersion is CRI Version's answer; RuntimeVersionErr its error.
	RuntimeVersion    *runtimeapi.VersionResponse
	RuntimeVersionErr error
	// RuntimeStatus is CRI Status's answer; RuntimeStatusErr its error.
	RuntimeStatus    *runtimeapi.StatusResponse
	RuntimeStatusErr error
	// PLEGErr is the PLEG's health error (nil when healthy).
	PLEGErr error
	// ShutdownErr is the node shutdown's status (nodeshutdown.Manager's
	// ShutdownStatus): "node is shutting down" while it shuts down, nil
	// otherwise.
	ShutdownErr error
	// Pressure, MemoryPressure etc. come from Pressure; nil means none.
	Pressure Pressure
	// Addresses are the node's addresses.
	Addresses []v1.NodeAddress
	// Images is the runtime's image list.
	Images []*runtimeapi.Image
	// KubeletPort is the kubelet's endpoint port (0: none reported).
	KubeletPort int32
	// DeclaredFeatures are the node's declared features, in any order.
	DeclaredFeatures []string
	// Old is the last status built; conditions keep its transition times
	// while their status does not change.
	Old *v1.NodeStatus
	// Now stamps heartbeats and transitions.
	Now time.Time
}

// BuildStatus returns the node's status: capacity and allocatable, node
// info, the conditions MemoryPressure, DiskPressure, PIDPressure and Ready
// (in that order, as upstream) with upstream's reasons and messages,
// addresses, images, the declared features (sorted, once each, as the
// API server requires; unset when there are none), the runtime's
// features (features.supplementalGroupsPolicy; unset until the runtime's
// status says) and its handlers (runtimeHandlers: each one's name and
// whether it supports recursive read-only mounts and user namespaces). Ready is False with a message naming each problem
// when the runtime cannot be reached or is not ready, its network is not
// ready, the PLEG is unhealthy, or the node is shutting down. It is a pure function of its input.
func BuildStatus(in Input) v1.NodeStatus {
	var s v1.NodeStatus
	s.Capacity = in.Capacity.DeepCopy()
	s.Allocatable = Allocatable(in.Capacity, in.Reserved)
	for name, q := range in.ExtendedCapacity {
		if s.Capacity == nil {
			s.Capacity, s.Allocatable = v1.ResourceList{}, v1.ResourceList{}
		}
		s.Capacity[name] = q.DeepCopy()
		s.Allocatable[name] = q.DeepCopy()
		if a, ok := in.ExtendedAllocatable[name]; ok {
			s.Allocatable[name] = a.DeepCopy()
		}
	}
	s.NodeInfo = in.SystemInfo
	s.NodeInfo.KubeletVersion = in.KubeletVersion
	if v := in.RuntimeVersion; v != nil && in.RuntimeVersionErr == nil {
		s.NodeInfo.ContainerRuntimeVersion = v.GetRuntimeName() + "://" + v.GetRuntimeVersion()
	} else if in.Old != nil {
		s.NodeInfo.ContainerRuntimeVersion = in.Old.NodeInfo.ContainerRuntimeVersion
	}
	s.Addresses = slices.Clone(in.Addresses)
	if in.KubeletPort != 0 {
		s.DaemonEndpoints.KubeletEndpoint.Port = in.KubeletPort
	}
	s.Images = images(in.Images)
	s.DeclaredFeatures = declaredFeatures(in.DeclaredFeatures)
	// features.supplementalGroupsPolicy is what the runtime's status says
	// (upstream's NodeFeatures setter); while the runtime does not answer,
	// what it said last.
	if f := in.RuntimeStatus.GetFeatures(); f != nil && in.RuntimeStatusErr == nil {
		supported := f.GetSupplementalGroupsPolicy()
		s.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: &supported}
	} else if in.Old != nil && in.Old.Features != nil {
		s.Features = in.Old.Features.DeepCopy()
	}
	// runtimeHandlers are the runtime's handlers with what each supports
	// (upstream's RuntimeHandlers setter, RecursiveReadOnlyMounts and
	// UserNamespacesSupport on); while the runtime does not answer, what
	// it said last.
	if in.RuntimeStatus != nil && in.RuntimeStatusErr == nil {
		s.RuntimeHandlers = runtimeHandlers(in.RuntimeStatus.GetRuntimeHandlers())
	} else if in.Old != nil {
		s.RuntimeHandlers = slices.Clone(in.Old.RuntimeHandlers)
	}

	now := metav1.NewTime(in.Now)
	var mem, disk, pid bool
	if in.Pressure != nil {
		mem, disk, pid = in.Pressure.IsUnderMemoryPressure(), in.Pressure.IsUnderDiskPressure(), in.Pressure.IsUnderPIDPressure()
	}
	s.Conditions = []v1.NodeCondition{
		pressure(v1.NodeMemoryPressure, mem, ReasonInsufficientMemory, "kubelet has insufficient memory available", ReasonSufficientMemory, "kubelet has sufficient memory available"),
		pressure(v1.NodeDiskPressure, disk, ReasonDiskPressure, "kubelet has disk pressure", ReasonNoDiskPressure, "kubelet has no disk pressure"),
		pressure(v1.NodePIDPressure, pid, ReasonInsufficientPID, "kubelet has insufficient PID available", ReasonSufficientPID, "kubelet has sufficient PID available"),
		ready(in),
	}
	var old []v1.NodeCondition
	if in.Old != nil {
		old = in.Old.Conditions
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		c.LastHeartbeatTime = now
		c.LastTransitionTime = now
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return s
}

func pressure(t v1.NodeConditionType, under bool, rTrue, mTrue, rFalse, mFalse string) v1.NodeCondition {
	if under {
		return v1.NodeCondition{Type: t, Status: v1.ConditionTrue, Reason: rTrue, Message: mTrue}
	}
	return v1.NodeCondition{Type: t, Status: v1.ConditionFalse, Reason: rFalse, Message: mFalse}
}

// ready builds the Ready condition from the runtime's and the PLEG's health
// and the node's shutdown, in upstream's order.
func ready(in Input) v1.NodeCondition {
	var errs []string
	switch {
	case in.RuntimeStatusErr != nil:
		errs = append(errs, "container runtime is down: "+in.RuntimeStatusErr.Error())
	case in.RuntimeStatus == nil:
		errs = append(errs, "container runtime status check may not have completed yet")
	default:
		var rt, nw *runtimeapi.RuntimeCondition
		for _, c := range in.RuntimeStatus.GetStatus().GetConditions() {
			switch c.GetType() {
			case runtimeapi.RuntimeReady:
				rt = c
			case runtimeapi.NetworkReady:
				nw = c
			}
		}
		if rt == nil || !rt.GetStatus() {
			errs = append(errs, "container runtime not ready: "+conditionString(runtimeapi.RuntimeReady, rt))
		}
		if nw == nil || !nw.GetStatus() {
			errs = append(errs, "container runtime network not ready: "+conditionString(runtimeapi.NetworkReady, nw))
		}
	}
	if in.PLEGErr != nil {
		errs = append(errs, "PLEG is not healthy: "+in.PLEGErr.Error())
	}
	if in.ShutdownErr != nil {
		errs = append(errs, in.ShutdownErr.Error())
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods} {
		if _, ok := in.Capacity[r]; !ok {
			errs = append(errs, fmt.Sprintf("missing node capacity for resources: %s", r))
		}
	}
	if len(errs) == 0 {
		return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: ReasonKubeletReady, Message: MessageKubeletReady}
	}
	msg := errs[0]
	if len(errs) > 1 {
		msg = "[" + strings.Join(errs, ", ") + "]"
	}
	return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: ReasonKubeletNotReady, Message: msg}
}

func conditionString(t string, c *runtimeapi.RuntimeCondition) string {
	if c == nil {
		return t + "=false reason: message:condition not reported"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
}

// Allocatable returns capacity minus reserved, never below zero, as
// upstream's node status: a resource reserved but not in capacity is
// ignored, and the memory of the huge pages (every hugepages-<size> of
// capacity) is taken off allocatable memory as well, since a huge page is
// never ordinary memory.
func Allocatable(capacity, reserved v1.ResourceList) v1.ResourceList {
	out := make(v1.ResourceList, len(capacity))
	for name, q := range capacity {
		v := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			v.Sub(r)
			if v.Sign() < 0 {
				v = *resource.NewQuantity(0, q.Format)
			}
		}
		out[name] = v
	}
	mem, ok := out[v1.ResourceMemory]
	if !ok {
		return out
	}
	for name, q := range capacity {
		if strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			mem.Sub(q)
		}
	}
	if mem.Sign() < 0 {
		mem = *resource.NewQuantity(0, mem.Format)
	}
	out[v1.ResourceMemory] = mem
	return out
}

// Reserved sums, for each resource of capacity, what the lists reserve of
// it (kube-reserved, system-reserved, the hard eviction thresholds), as
// upstream's node allocatable reservation; resources of which nothing is
// reserved are left out, and so are those capacity does not have.
func Reserved(capacity v1.ResourceList, lists ...v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name := range capacity {
		sum := resource.NewQuantity(0, resource.DecimalSI)
		for _, l := range lists {
			if q, ok := l[name]; ok {
				sum.Add(q)
			}
		}
		if !sum.IsZero() {
			out[name] = *sum
		}
	}
	return out
}

// images lists the largest MaxImages images, each under its digests then
// its tags (at most MaxNamesPerImage names).
func images(list []*runtimeapi.Image) []v1.ContainerImage {
	if len(list) == 0 {
		return nil
	}
	sorted := slices.Clone(list)
	slices.SortStableFunc(sorted, func(a, b *runtimeapi.Image) int {
		switch {
		case a.GetSize() > b.GetSize():
			return -1
		case a.GetSize() < b.GetSize():
			return 1
		}
		return 0
	})
	if len(sorted) > MaxImages {
		sorted = sorted[:MaxImages]
	}
	out := make([]v1.ContainerImage, 0, len(sorted))
	for _, img := range sorted {
		names := append(slices.Clone(img.GetRepoDigests()), img.GetRepoTags()...)
		if len(names) > MaxNamesPerImage {
			names = names[:MaxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out
}

// declaredFeatures is the list status.declaredFeatures holds: sorted and
// without duplicates, as the API server's validation wants it (upstream's
// discovery makes it so); nil for none.
func declaredFeatures(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(names)))
}

// featureName is what the API server accepts as a declared feature's name
// (upstream's validation of status.declaredFeatures).
var featureName = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*$`)

// invalidFeature returns the first name the API server would refuse as a
// declared feature, and whether there is one.
func invalidFeature(names []string) (string, bool) {
	for _, n := range names {
		// At most a DNS subdomain's length, as upstream's validation.
		if len(n) > 253 || !featureName.MatchString(n) {
			return n, true
		}
	}
	return "", false
}

// ErrNodeNotFound and ErrLeaseNotFound are wrapped by the sinks' errors for
// a node or lease they do not hold.
var (
	ErrNodeNotFound  = errors.New("node not found")
	ErrLeaseNotFound = errors.New("lease not found")
)

// runtimeHandlers are the node status's runtimeHandlers for the runtime's
// handlers, in its order: each one's name (the default handler's is "")
// and whether it supports recursive read-only mounts and user namespaces.
func runtimeHandlers(hs []*runtimeapi.RuntimeHandler) []v1.NodeRuntimeHandler {
	if len(hs) == 0 {
		return nil
	}
	out := make([]v1.NodeRuntimeHandler, len(hs))
	for i, h := range hs {
		rro, userns := h.GetFeatures().GetRecursiveReadOnlyMounts(), h.GetFeatures().GetUserNamespaces()
		out[i] = v1.NodeRuntimeHandler{Name: h.GetName(),
			Features: &v1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: &userns}}
	}
	return out
}
