package validation

import (
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSeccompProfile checks a seccompProfile as the API server does: a
// known type, and a Localhost profile's name relative and without "..", so
// that it cannot name a file outside the kubelet's seccomp directory.
func validateSeccompProfile(sp *v1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), sp.Type, []v1.SeccompProfileType{
			v1.SeccompProfileTypeLocalhost, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined}))
	}
	lp := p.Child("localhostProfile")
	switch {
	case sp.Type != v1.SeccompProfileTypeLocalhost:
		if sp.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(lp, sp, "can only be set when seccomp type is Localhost"))
		}
	case sp.LocalhostProfile == nil:
		errs = append(errs, field.Required(lp, "must be set when seccomp type is Localhost"))
	default:
		name := *sp.LocalhostProfile
		if path.IsAbs(name) {
			errs = append(errs, field.Invalid(lp, name, "must be a relative path"))
		}
		for _, part := range strings.Split(filepath.ToSlash(name), "/") {
			if part == ".." {
				errs = append(errs, field.Invalid(lp, name, "must not contain '..'"))
				break
			}
		}
	}
	return errs
}

// maxAppArmorProfileName is the longest Localhost AppArmor profile name the
// API server admits: PATH_MAX - 1.
const maxAppArmorProfileName = 4095

// validateAppArmorProfile checks an appArmorProfile as the API server does:
// a known type, and a Localhost profile's name set, not blank, not padded
// with white space and not too long.
func validateAppArmorProfile(ap *v1.AppArmorProfile, p *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	lp := p.Child("localhostProfile")
	var errs field.ErrorList
	switch ap.Type {
	case v1.AppArmorProfileTypeLocalhost:
		if ap.LocalhostProfile == nil {
			return append(errs, field.Required(lp, "must be set when AppArmor type is Localhost"))
		}
		name := *ap.LocalhostProfile
		trimmed := strings.TrimSpace(name)
		if trimmed != name {
			errs = append(errs, field.Invalid(lp, name, "must not be padded with whitespace"))
		} else if trimmed == "" {
			errs = append(errs, field.Required(lp, "must be set when AppArmor type is Localhost"))
		}
		if len(name) > maxAppArmorProfileName {
			errs = append(errs, field.TooLong(lp, "", maxAppArmorProfileName))
		}
	case v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			errs = append(errs, field.Invalid(lp, ap.LocalhostProfile, "can only be set when AppArmor type is Localhost"))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when appArmorProfile is set"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), ap.Type, []v1.AppArmorProfileType{
			v1.AppArmorProfileTypeLocalhost, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined}))
	}
	return errs
}

// validateSupplementalGroupsPolicy checks the pod's supplementalGroupsPolicy
// names a policy the API server knows.
func validateSupplementalGroupsPolicy(sgp *v1.SupplementalGroupsPolicy, p *field.Path) field.ErrorList {
	if sgp == nil {
		return nil
	}
	switch *sgp {
	case v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, *sgp, []v1.SupplementalGroupsPolicy{
		v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict})}
}
