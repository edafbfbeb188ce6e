package dra

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/kubeletkit/kubeletkit/devices"
)

// CDIDevices are the CDI device IDs (vendor.com/class=name) prepared for
// the claims container c of the pod uses, for its CRI config's
// CDIDevices, as upstream's GetResources gives them: for each of the pod's
// claims the container lists in resources.claims (all of the claim's
// devices, or those of the request it names), then, with
// DRAExtendedResource, for the scheduler's claim of the pod's DRA-backed
// extended resources, the requests that
// status.extendedResourceClaimStatus.requestMappings map to this
// container's non-zero extended resource requests. A device that names no
// request serves every request of its claim. Each ID comes once, in the
// order of the claims, then the drivers' names, then the driver's answer.
// A claim the Manager has not recorded is an error ("internal error:
// unable to get claim info for ResourceClaim NAME in namespace NS"): the
// container's CreateContainerConfigError.
func (m *Manager) CDIDevices(pod *v1.Pod, c *v1.Container) ([]string, error) {
	type use struct {
		claim    string
		requests []string // "" for all of the claim's
	}
	var uses []use
	add := func(claim, request string) {
		for i := range uses {
			if uses[i].claim == claim {
				uses[i].requests = append(uses[i].requests, request)
				return
			}
		}
		uses = append(uses, use{claim: claim, requests: []string{request}})
	}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		var requests []string
		used := false
		for _, rc := range c.Resources.Claims {
			if rc.Name == pc.Name {
				used = true
				requests = append(requests, rc.Request)
			}
		}
		if !used {
			continue
		}
		name, _, err := claimName(pod, pc)
		if err != nil {
			return nil, err
		}
		if name == "" {
			continue
		}
		for _, r := range requests {
			add(name, r)
		}
	}
	if ext := pod.Status.ExtendedResourceClaimStatus; ext != nil {
		for _, rm := range ext.RequestMappings {
			q, ok := c.Resources.Requests[v1.ResourceName(rm.ResourceName)]
			if rm.ContainerName == c.Name && ok && !q.IsZero() && isDRAExtendedResource(v1.ResourceName(rm.ResourceName)) {
				add(ext.ResourceClaimName, rm.RequestName)
			}
		}
	}
	if len(uses) == 0 {
		return nil, nil
	}
	var ids []string
	seen := map[string]bool{}
	err := m.withCache(func() error {
		for _, u := range uses {
			info := m.cache[key(pod.Namespace, u.claim)]
			if info == nil {
				return fmt.Errorf("internal error: unable to get claim info for ResourceClaim %s in namespace %s", u.claim, pod.Namespace)
			}
			for _, r := range u.requests {
				for _, d := range slices.Sorted(maps.Keys(info.DriverState)) {
					for _, dev := range info.DriverState[d].Devices {
						if r != "" && len(dev.RequestNames) != 0 && !slices.Contains(dev.RequestNames, r) {
							continue
						}
						for _, id := range dev.CDIDeviceIDs {
							if !seen[id] {
								seen[id] = true
								ids = append(ids, id)
							}
						}
					}
				}
			}
		}
		return nil
	})
	return ids, err
}

// isDRAExtendedResource reports whether a resource may be served by DRA
// through the scheduler's claim: an extended resource, or one named for a
// DeviceClass (deviceclass.resource.kubernetes.io/NAME), as upstream's
// scheduler helper.
func isDRAExtendedResource(name v1.ResourceName) bool {
	return devices.IsExtendedResourceName(name) || strings.HasPrefix(string(name), resourcev1.ResourceDeviceClassPrefix)
}
