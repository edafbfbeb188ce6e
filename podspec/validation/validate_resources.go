package validation

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResources checks resource requirements, a container's or the
// pod's: names valid where they are used (nameOK), quantities not negative
// (whole numbers for extended resources, page multiples for huge pages),
// requests at most their limits (equal for resources that cannot be
// overcommitted, whose limit is required), huge pages only with cpu or
// memory. Resources are taken in name order, so that the errors are always
// in the same order.
func validateResources(r *v1.ResourceRequirements, nameOK func(v1.ResourceName, *field.Path) field.ErrorList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := p.Child("limits"), p.Child("requests")
	var cpuOrMemory, hugePages bool
	quantity := func(name v1.ResourceName, q resource.Quantity, fp *field.Path) {
		errs = append(errs, nameOK(name, fp)...)
		errs = append(errs, nonNegativeQuantity(q, fp)...)
		if isIntegerResource(name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(fp, q, "must be an integer"))
		}
	}
	kind := func(name v1.ResourceName, q resource.Quantity, fp *field.Path) {
		if isHugePages(name) {
			hugePages = true
			if !hugePagesDivisible(name, q) {
				errs = append(errs, field.Invalid(fp, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
			}
		}
		if name == v1.ResourceCPU || name == v1.ResourceMemory {
			cpuOrMemory = true
		}
	}
	for _, name := range sortedNames(r.Limits) {
		fp := limPath.Key(string(name))
		quantity(name, r.Limits[name], fp)
		kind(name, r.Limits[name], fp)
	}
	for _, name := range sortedNames(r.Requests) {
		q, fp := r.Requests[name], reqPath.Key(string(name))
		quantity(name, q, fp)
		limit, ok := r.Limits[name]
		switch {
		case !ok && !overcommitAllowed(name):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		case !ok:
		case q.Cmp(limit) != 0 && !overcommitAllowed(name):
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
		kind(name, q, fp)
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(p, "HugePages require cpu or memory"))
	}
	return errs
}

// nonNegativeQuantity refuses a negative quantity.
func nonNegativeQuantity(q resource.Quantity, p *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(p, q.String(), apivalidation.IsNegativeErrorMsg)}
	}
	return nil
}

func sortedNames(l v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// resourceName checks a resource name anywhere: a qualified name, and if
// it has no domain, one of the standard resources.
func resourceName(name v1.ResourceName, p *field.Path) field.ErrorList {
	if errs := invalid(p, name, validation.IsQualifiedName(string(name))); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !isStandardResource(name) {
		return field.ErrorList{field.Invalid(p, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

// containerResourceName checks a container's resource name: cpu, memory,
// ephemeral-storage, hugepages-<size>, or an extended resource.
func containerResourceName(name v1.ResourceName, p *field.Path) field.ErrorList {
	errs := resourceName(name, p)
	if !strings.Contains(string(name), "/") {
		if name != v1.ResourceCPU && name != v1.ResourceMemory && name != v1.ResourceEphemeralStorage && !isHugePages(name) {
			errs = append(errs, field.Invalid(p, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResource(name) {
		errs = append(errs, field.Invalid(p, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

// podResourceName checks a pod-level resource name: cpu, memory or
// hugepages-<size>.
func podResourceName(name v1.ResourceName, p *field.Path) field.ErrorList {
	if errs := resourceName(name, p); len(errs) > 0 {
		return errs
	}
	if name != v1.ResourceCPU && name != v1.ResourceMemory && !isHugePages(name) {
		return field.ErrorList{field.NotSupported(p, name, []v1.ResourceName{v1.ResourceCPU, v1.ResourceHugePagesPrefix, v1.ResourceMemory})}
	}
	return nil
}

// standardResources are the resource names without a domain the API knows.
var standardResources = []v1.ResourceName{
	v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage,
	v1.ResourceRequestsCPU, v1.ResourceRequestsMemory, v1.ResourceRequestsEphemeralStorage,
	v1.ResourceLimitsCPU, v1.ResourceLimitsMemory, v1.ResourceLimitsEphemeralStorage,
	v1.ResourcePods, v1.ResourceQuotas, v1.ResourceServices, v1.ResourceReplicationControllers,
	v1.ResourceSecrets, v1.ResourceConfigMaps, v1.ResourcePersistentVolumeClaims, v1.ResourceStorage,
	v1.ResourceRequestsStorage, v1.ResourceServicesNodePorts, v1.ResourceServicesLoadBalancers,
}

// integerResources are the standard resources counted in whole numbers.
var integerResources = []v1.ResourceName{
	v1.ResourcePods, v1.ResourceQuotas, v1.ResourceServices, v1.ResourceReplicationControllers,
	v1.ResourceSecrets, v1.ResourceConfigMaps, v1.ResourcePersistentVolumeClaims,
	v1.ResourceServicesNodePorts, v1.ResourceServicesLoadBalancers,
}

func isStandardResource(name v1.ResourceName) bool {
	return slices.Contains(standardResources, name) || isHugePages(name) ||
		strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix+v1.ResourceHugePagesPrefix)
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// isNativeResource: no domain, or a kubernetes.io one.
func isNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// isExtendedResource: a resource of another domain than kubernetes.io,
// whose quota name ("requests.<name>") is a qualified name.
func isExtendedResource(name v1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isIntegerResource(name v1.ResourceName) bool {
	return slices.Contains(integerResources, name) || isExtendedResource(name)
}

// overcommitAllowed: requests may be below limits (native resources but
// huge pages).
func overcommitAllowed(name v1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}

// hugePagesDivisible reports whether q is a whole number of the pages that
// name (hugepages-<size>) counts.
func hugePagesDivisible(name v1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), v1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}
