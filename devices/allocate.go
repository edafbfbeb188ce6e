package devices

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/topologymanager"
)

// allocation is the devices of one resource given to one container, the
// NUMA nodes of each as its plugin listed them then, and what the plugin
// answered to Allocate.
type allocation struct {
	ids  []string // sorted
	numa map[string][]int
	resp *pluginapi.ContainerAllocateResponse
}

// podDevices: pod UID → container name → resource name → allocation.
type podDevices map[types.UID]map[string]map[string]*allocation

func (p podDevices) get(uid types.UID, container, res string) *allocation {
	return p[uid][container][res]
}

func (p podDevices) set(uid types.UID, container, res string, a *allocation) {
	if p[uid] == nil {
		p[uid] = map[string]map[string]*allocation{}
	}
	if p[uid][container] == nil {
		p[uid][container] = map[string]*allocation{}
	}
	p[uid][container][res] = a
}

// inUse returns the devices of res that any container holds.
func (p podDevices) inUse(res string) map[string]struct{} {
	used := map[string]struct{}{}
	for _, containers := range p {
		for _, byRes := range containers {
			if a := byRes[res]; a != nil {
				for _, id := range a.ids {
					used[id] = struct{}{}
				}
			}
		}
	}
	return used
}

// holders adds to uids the pods holding device id of res.
func (p podDevices) holders(res, id string, uids map[types.UID]struct{}) {
	for uid, containers := range p {
		for _, byRes := range containers {
			if a := byRes[res]; a != nil && slices.Contains(a.ids, id) {
				uids[uid] = struct{}{}
			}
		}
	}
}

func (p podDevices) holds(res string) bool {
	for _, containers := range p {
		for _, byRes := range containers {
			if _, ok := byRes[res]; ok {
				return true
			}
		}
	}
	return false
}

// Admit allocates devices to every container of pod that asks for a device
// plugin resource in its limits, init containers first, in order, and
// answers as an admission handler does: on failure the pod is refused with
// reason UnexpectedAdmissionError and upstream's message, and holds nothing.
// The devices a regular init container got are given again to the
// containers after it, as upstream reuses them; a restartable init
// container (a sidecar) keeps its own. others are the pods admitted before
// and still active: devices of any other pod are released, as upstream
// releases them when it allocates. A pod already admitted keeps its
// devices (a container restarting gets the same ones).
//
// Admit is the device manager's admission when no topology manager drives
// it; with one, the topology manager calls Allocate instead (see Allocate).
func (m *Manager) Admit(pod *v1.Pod, others []*v1.Pod) (ok bool, reason, message string) {
	m.admitMu.Lock()
	defer m.admitMu.Unlock()
	m.prepare(pod, others)
	for _, c := range podspec.Containers(pod) {
		if err := m.allocate(pod, c); err != nil {
			m.RemovePod(pod.UID)
			return false, ReasonUnexpectedAdmissionError, fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)
		}
	}
	return true, "", ""
}

// Prepare readies the manager for pod's admission through the topology
// manager: it releases the devices of every pod but pod and others (the
// pods admitted before and still active), as upstream releases them before
// it hints and allocates, and forgets the devices an earlier admission set
// aside for reuse. Call it before the topology manager admits pod; Admit
// calls it itself.
func (m *Manager) Prepare(pod *v1.Pod, others []*v1.Pod) {
	m.admitMu.Lock()
	defer m.admitMu.Unlock()
	m.prepare(pod, others)
}

func (m *Manager) prepare(pod *v1.Pod, others []*v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reusePod, m.reuse = pod.UID, map[string]map[string]struct{}{}
	if len(m.pods) == 0 {
		return
	}
	released := false
	active := activeUIDs(pod, others)
	for uid := range m.pods {
		if _, ok := active[uid]; !ok {
			delete(m.pods, uid)
			released = true
		}
	}
	if released {
		m.checkpointLocked()
	}
}

// RemovePod releases every device the pod's containers hold. The agent
// calls it for a pod the topology manager refused after some of its
// containers got their devices.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reusePod == uid {
		m.reusePod, m.reuse = "", nil
	}
	if _, ok := m.pods[uid]; ok {
		delete(m.pods, uid)
		m.checkpointLocked()
	}
}

// Allocate gives container c of pod the devices its limits ask for:
// upstream's Allocate, the topology manager's HintProvider call, made for
// each container in order, init containers first. A container that holds
// devices of a resource already keeps them; a regular init container's
// devices are given again to the pod's containers after it, a sidecar's
// are not. Devices come from the container's affinity
// (Options.Affinity) first, as upstream takes them: the reusable devices,
// then, when the free devices with a node in the affinity are more than
// needed, the plugin's preferred choice among them (when it offers one)
// and then the others among them; when they are not more, all of them,
// then the plugin's preferred choice among all free devices, then free
// devices on other nodes, then free devices without a node. Without an
// affinity, or for a resource none of whose devices has a node, the free
// devices are taken in the plugin's preferred order, then by ID. The
// plugin's Allocate answer is kept for the container's config and the
// checkpoint. Errors are upstream's; a failing container keeps nothing of
// what it got for this call's resources, and the pod keeps what its
// earlier containers got (RemovePod releases it).
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container) error {
	m.admitMu.Lock()
	defer m.admitMu.Unlock()
	return m.allocate(pod, c)
}

// allocate is Allocate with admitMu held.
func (m *Manager) allocate(pod *v1.Pod, c *v1.Container) error {
	m.mu.Lock()
	if m.reusePod != pod.UID || m.reuse == nil {
		// Reuse is for one pod at a time, as upstream keeps it.
		m.reusePod, m.reuse = pod.UID, map[string]map[string]struct{}{}
	}
	m.mu.Unlock()
	got, err := m.allocateContainer(pod, c)
	if err != nil {
		return err
	}
	regularInit := podspec.IsRegularInitContainer(pod, c)
	m.mu.Lock()
	defer m.mu.Unlock()
	for res, ids := range got {
		for _, id := range ids {
			if regularInit {
				if m.reuse[res] == nil {
					m.reuse[res] = map[string]struct{}{}
				}
				m.reuse[res][id] = struct{}{}
			} else {
				delete(m.reuse[res], id)
			}
		}
	}
	return nil
}

// allocateContainer gives c the devices its limits ask for and returns them
// by resource.
func (m *Manager) allocateContainer(pod *v1.Pod, c *v1.Container) (map[string][]string, error) {
	got := map[string][]string{}
	for _, res := range sortedNames(c.Resources.Limits) {
		q := c.Resources.Limits[v1.ResourceName(res)]
		if q.Value() <= 0 {
			continue
		}
		m.mu.Lock()
		isDevice := m.isDeviceResource(res)
		reuse := sortedKeys(m.reuse[res])
		m.mu.Unlock()
		if !isDevice {
			continue
		}
		ids, err := m.allocateResource(pod, c, res, int(q.Value()), reuse)
		if err != nil {
			return nil, err
		}
		got[res] = ids
	}
	return got, nil
}

// allocateResource chooses required devices of res for c, asks the plugin
// to allocate them and records the answer. A container that holds devices
// of res already keeps them.
func (m *Manager) allocateResource(pod *v1.Pod, c *v1.Container, res string, required int, reuse []string) ([]string, error) {
	var affinity topologymanager.Mask
	if m.o.Affinity != nil {
		affinity = m.o.Affinity.Affinity(pod.UID, c.Name).NUMANodes
	}
	m.mu.Lock()
	if a := m.pods.get(pod.UID, c.Name, res); a != nil {
		m.mu.Unlock()
		if len(a.ids) != required {
			return nil, fmt.Errorf("pod %q container %q changed request for resource %q from %d to %d", pod.UID, c.Name, res, len(a.ids), required)
		}
		return a.ids, nil
	}
	r := m.resources[res]
	if r == nil {
		m.mu.Unlock()
		return nil, fmt.Errorf("cannot allocate unregistered device %s", res)
	}
	healthy := 0
	for id := range r.health {
		if r.healthy(id) {
			healthy++
		}
	}
	if healthy == 0 {
		m.mu.Unlock()
		return nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", res)
	}
	chosen := make([]string, 0, required)
	take := func(ids []string) bool {
		for _, id := range ids {
			if len(chosen) == required {
				break
			}
			if !slices.Contains(chosen, id) {
				chosen = append(chosen, id)
			}
		}
		return len(chosen) == required
	}
	take(reuse)
	available := m.available(res, r)
	needed := required - len(chosen)
	if needed > 0 && len(available) < needed {
		m.mu.Unlock()
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", res, needed, len(available))
	}
	aligned, unaligned, noNode := filterByAffinity(affinity, r.numa, available)
	ep := r.ep
	// Admit and Allocate are serialized, so no other allocation takes
	// these devices while the plugin is asked.
	m.mu.Unlock()

	if needed > 0 {
		if err := m.choose(ep, c.Name, res, required, &chosen, take, available, aligned, unaligned, noNode); err != nil {
			return nil, err
		}
	}
	sort.Strings(chosen)
	if ep == nil {
		return nil, fmt.Errorf("endpoint not found in cache for a registered resource: %s", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.o.RPCTimeout)
	defer cancel()
	resp, err := ep.client.Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: chosen}},
	})
	if err != nil {
		return nil, err
	}
	if len(resp.GetContainerResponses()) == 0 {
		return nil, fmt.Errorf("no containers return in allocation response %v", resp)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	numa := map[string][]int{}
	for _, id := range chosen {
		if ns := m.numaNodes(res, id); len(ns) > 0 {
			numa[id] = slices.Clone(ns)
		}
	}
	m.pods.set(pod.UID, c.Name, res, &allocation{ids: chosen, numa: numa, resp: resp.GetContainerResponses()[0]})
	m.checkpointLocked()
	return chosen, nil
}

// choose completes chosen, which holds the reused devices, with free
// devices, in upstream's order (see Allocate). take appends devices until
// chosen has required and reports whether it has.
func (m *Manager) choose(ep *endpoint, container, res string, required int, chosen *[]string, take func([]string) bool,
	available, aligned, unaligned, noNode []string) error {
	preferred := func(from []string) ([]string, error) {
		if ep == nil {
			return nil, fmt.Errorf("endpoint not found in cache for a registered resource: %s", res)
		}
		if !ep.options.GetGetPreferredAllocationAvailable() {
			return nil, nil
		}
		ids, err := m.preferred(ep, container, from, *chosen, required)
		return intersect(ids, from), err
	}
	if needed := required - len(*chosen); needed < len(aligned) {
		ids, err := preferred(aligned)
		if err != nil {
			return err
		}
		if take(ids) || take(aligned) {
			return nil
		}
		return fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", required, len(*chosen))
	}
	if take(aligned) {
		return nil
	}
	ids, err := preferred(available)
	if err != nil {
		return err
	}
	if take(ids) || take(unaligned) || take(noNode) {
		return nil
	}
	return fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", required, len(*chosen))
}

// filterByAffinity splits the available devices, sorted, as upstream's
// filterByAffinity does: those with a NUMA node in affinity, those whose
// nodes are all outside it, and those without a node. With no affinity, or
// when no device of the resource has a node, all are in the last.
func filterByAffinity(affinity topologymanager.Mask, numa map[string][]int, available []string) (aligned, unaligned, noNode []string) {
	if affinity.IsEmpty() || len(numa) == 0 {
		return nil, nil, available
	}
	for _, id := range available {
		switch ns := numa[id]; {
		case len(ns) == 0:
			noNode = append(noNode, id)
		case anyIn(affinity, ns):
			aligned = append(aligned, id)
		default:
			unaligned = append(unaligned, id)
		}
	}
	return aligned, unaligned, noNode
}

// intersect returns the IDs of ids that are in allowed, in ids' order.
func intersect(ids, allowed []string) []string {
	var out []string
	for _, id := range ids {
		if slices.Contains(allowed, id) {
			out = append(out, id)
		}
	}
	return out
}

// sortedKeys returns a set's members, sorted; nil for an empty set.
func sortedKeys(set map[string]struct{}) []string {
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

func (m *Manager) preferred(ep *endpoint, container string, available, mustInclude []string, size int) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), m.o.RPCTimeout)
	defer cancel()
	resp, err := ep.client.GetPreferredAllocation(ctx, &pluginapi.PreferredAllocationRequest{
		ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{{
			AvailableDeviceIDs:   append(slices.Clone(available), mustInclude...),
			MustIncludeDeviceIDs: mustInclude,
			AllocationSize:       int32(size),
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("device plugin GetPreferredAllocation rpc failed with err: %v", err)
	}
	if rs := resp.GetContainerResponses(); len(rs) > 0 {
		return rs[0].GetDeviceIDs(), nil
	}
	return nil, nil
}

// Allocated returns, for each resource, how many of its devices pods
// hold. The
// resource-fit admission counts a resource's allocatable as at least this
// much, as upstream does for the devices already given: a node restarted
// before its plugins registered again, or whose held devices turned
// unhealthy, admits again the pods that hold them.
func (m *Manager) Allocated() v1.ResourceList {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := map[string]map[string]struct{}{}
	for _, containers := range m.pods {
		for _, byRes := range containers {
			for res, a := range byRes {
				if held[res] == nil {
					held[res] = map[string]struct{}{}
				}
				for _, id := range a.ids {
					held[res][id] = struct{}{}
				}
			}
		}
	}
	out := make(v1.ResourceList, len(held))
	for res, ids := range held {
		out[v1.ResourceName(res)] = *resource.NewQuantity(int64(len(ids)), resource.DecimalSI)
	}
	return out
}

// Devices returns the device IDs each resource gave a container, by
// resource name; nil when it holds none.
func (m *Manager) Devices(uid types.UID, container string) map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out map[string][]string
	for res, a := range m.pods[uid][container] {
		if out == nil {
			out = map[string][]string{}
		}
		out[res] = slices.Clone(a.ids)
	}
	return out
}

// AllocatableDevices returns the IDs of each resource's healthy devices,
// sorted, by resource name: the devices that could be given, held or not
// (upstream's GetAllocatableDevices, which the pod-resources API reports).
// A resource whose plugin went away has none.
func (m *Manager) AllocatableDevices() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for name, r := range m.resources {
		var ids []string
		for id := range r.health {
			if r.healthy(id) {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			sort.Strings(ids)
			out[name] = ids
		}
	}
	return out
}

// ApplyDevices adds to a container's CRI config what the plugins answered
// when its devices were allocated: their environment variables and mounts
// before the container's own (which win a clash), device nodes, CDI
// devices, and annotations the config does not set itself. Before that it
// calls PreStartContainer on each plugin that asks for it. A container
// without devices is left alone. It is the hook of
// containerconfig.Options.Devices.
func (m *Manager) ApplyDevices(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	m.mu.Lock()
	byRes := m.pods[pod.UID][c.Name]
	if len(byRes) == 0 {
		m.mu.Unlock()
		return nil
	}
	type held struct {
		res string
		a   *allocation
		ep  *endpoint
	}
	list := make([]held, 0, len(byRes))
	for _, res := range slices.Sorted(maps.Keys(byRes)) {
		var ep *endpoint
		if r := m.resources[res]; r != nil && r.stoppedAt.IsZero() {
			ep = r.ep
		}
		list = append(list, held{res, byRes[res], ep})
	}
	m.mu.Unlock()

	var envs []*runtimeapi.KeyValue
	envIndex := map[string]int{}
	mountPaths, devPaths, cdiNames := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var mounts []*runtimeapi.Mount
	for _, h := range list {
		if err := m.preStart(ctx, h.ep, h.res, h.a.ids); err != nil {
			return err
		}
		resp := h.a.resp
		for _, k := range slices.Sorted(maps.Keys(resp.GetEnvs())) {
			kv := &runtimeapi.KeyValue{Key: k, Value: []byte(resp.GetEnvs()[k])}
			if i, ok := envIndex[k]; ok {
				envs[i] = kv
				continue
			}
			envIndex[k] = len(envs)
			envs = append(envs, kv)
		}
		for _, mt := range resp.GetMounts() {
			if mountPaths[mt.GetContainerPath()] {
				continue
			}
			mountPaths[mt.GetContainerPath()] = true
			mounts = append(mounts, &runtimeapi.Mount{ContainerPath: mt.GetContainerPath(), HostPath: mt.GetHostPath(), Readonly: mt.GetReadOnly()})
		}
		for _, d := range resp.GetDevices() {
			if devPaths[d.GetContainerPath()] {
				continue
			}
			devPaths[d.GetContainerPath()] = true
			cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: d.GetContainerPath(), HostPath: d.GetHostPath(), Permissions: d.GetPermissions()})
		}
		for _, d := range resp.GetCdiDevices() {
			if cdiNames[d.GetName()] {
				continue
			}
			cdiNames[d.GetName()] = true
			cfg.CDIDevices = append(cfg.CDIDevices, &runtimeapi.CDIDevice{Name: d.GetName()})
		}
		for k, v := range resp.GetAnnotations() {
			if _, ok := cfg.Annotations[k]; ok {
				continue
			}
			if cfg.Annotations == nil {
				cfg.Annotations = map[string]string{}
			}
			cfg.Annotations[k] = v
		}
	}
	cfg.Envs = append(envs, cfg.Envs...)
	cfg.Mounts = append(mounts, cfg.Mounts...)
	return nil
}

func (m *Manager) preStart(ctx context.Context, ep *endpoint, res string, ids []string) error {
	if ep == nil {
		// A plugin that went away is needed only if it asked to be
		// called before its containers start; a restored allocation's
		// plugin is not known until it registers again.
		m.mu.Lock()
		r := m.resources[res]
		m.mu.Unlock()
		if r != nil && r.ep != nil && r.ep.options.GetPreStartRequired() {
			return fmt.Errorf("endpoint not found in cache for a registered resource: %s", res)
		}
		return nil
	}
	if !ep.options.GetPreStartRequired() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, preStartTimeout)
	defer cancel()
	if _, err := ep.client.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: ids}); err != nil {
		return fmt.Errorf("device plugin PreStartContainer rpc failed with err: %v", err)
	}
	return nil
}

// UpdateAllocatedResourcesStatus sets, in each container status of st, the
// health of the devices the container holds
// (allocatedResourcesStatus), as upstream's ResourceHealthStatus feature
// (on by default since 1.36) reports it: one entry per resource, each
// device Healthy or Unhealthy as its plugin last listed it (Healthy when
// never listed). Resources and devices are sorted, where upstream's order
// is a map's. Entries of other resources are kept.
func (m *Manager) UpdateAllocatedResourcesStatus(pod *v1.Pod, st *v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	containers := m.pods[pod.UID]
	if len(containers) == 0 {
		return
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		byRes := containers[cs.Name]
		for _, res := range slices.Sorted(maps.Keys(byRes)) {
			rs := v1.ResourceStatus{Name: v1.ResourceName(res), Resources: []v1.ResourceHealth{}}
			for _, id := range byRes[res].ids {
				h := v1.ResourceHealthStatusHealthy
				if ok, known := m.lastHealth[res][id]; known && !ok {
					h = v1.ResourceHealthStatusUnhealthy
				}
				rs.Resources = append(rs.Resources, v1.ResourceHealth{ResourceID: v1.ResourceID(id), Health: h})
			}
			j := slices.IndexFunc(cs.AllocatedResourcesStatus, func(s v1.ResourceStatus) bool { return s.Name == rs.Name })
			if j >= 0 {
				cs.AllocatedResourcesStatus[j] = rs
			} else {
				cs.AllocatedResourcesStatus = append(cs.AllocatedResourcesStatus, rs)
			}
		}
	}
}

// TakeHealthChanges returns, once, the pods holding a device whose health
// its plugin listed anew: their statuses are due again, as upstream syncs
// them.
func (m *Manager) TakeHealthChanges() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.healthChanged) == 0 {
		return nil
	}
	out := slices.Sorted(maps.Keys(m.healthChanged))
	clear(m.healthChanged)
	return out
}
