package dra

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	podresourcesapi "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DynamicResources are the devices prepared for the claims container c of
// the pod uses, for the pod-resources API's dynamic_resources
// (KubeletPodResourcesDynamicResources), as upstream's
// GetDynamicResources: for each claim the container lists in
// resources.claims, in the pod's order, then the scheduler's claim of the
// pod's extended resources when one of its request mappings names the
// container, every device of the claim (driver, pool, device, CDI
// devices), drivers by name. A claim not recorded leaves the answer empty,
// as upstream's logs and answers nothing.
func (m *Manager) DynamicResources(pod *v1.Pod, c *v1.Container) []*podresourcesapi.DynamicResource {
	var names []string
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		if !slices.ContainsFunc(c.Resources.Claims, func(rc v1.ResourceClaim) bool { return rc.Name == pc.Name }) {
			continue
		}
		name, _, err := claimName(pod, pc)
		if err != nil {
			return nil
		}
		if name != "" {
			names = append(names, name)
		}
	}
	if ext := pod.Status.ExtendedResourceClaimStatus; ext != nil &&
		slices.ContainsFunc(ext.RequestMappings, func(rm v1.ContainerExtendedResourceRequest) bool { return rm.ContainerName == c.Name }) {
		names = append(names, ext.ResourceClaimName)
	}
	if len(names) == 0 {
		return nil
	}
	var out []*podresourcesapi.DynamicResource
	err := m.withCache(func() error {
		for _, name := range names {
			info := m.cache[key(pod.Namespace, name)]
			if info == nil {
				return fmt.Errorf("ResourceClaim %s/%s is not recorded", pod.Namespace, name)
			}
			r := &podresourcesapi.DynamicResource{ClaimName: info.ClaimName, ClaimNamespace: info.Namespace}
			for _, d := range slices.Sorted(maps.Keys(info.DriverState)) {
				for _, dev := range info.DriverState[d].Devices {
					cr := &podresourcesapi.ClaimResource{DriverName: d, PoolName: dev.PoolName, DeviceName: dev.DeviceName}
					for _, id := range dev.CDIDeviceIDs {
						cr.CdiDevices = append(cr.CdiDevices, &podresourcesapi.CDIDevice{Name: id})
					}
					r.ClaimResources = append(r.ClaimResources, cr)
				}
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		m.log.Info("No dynamic resources for a container", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
		return nil
	}
	return out
}
