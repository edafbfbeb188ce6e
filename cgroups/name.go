package cgroups

import (
	"fmt"
	"path"
	"strings"
)

// Name is a cgroup's name as its components from the cgroup root down, the
// same for both drivers: {"kubepods", "burstable", "pod<uid>"} is
// /kubepods/burstable/pod<uid> with cgroupfs and
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
// with systemd. The root itself is the empty Name.
type Name []string

// Child returns n with one more component, checked by ValidComponent.
func (n Name) Child(component string) (Name, error) {
	if err := ValidComponent(component); err != nil {
		return nil, err
	}
	out := make(Name, 0, len(n)+1)
	return append(append(out, n...), component), nil
}

// ValidComponent refuses what cannot be one component of a Name under both
// drivers: an empty string, ".", "..", a "/" (it would be two), and a "_"
// (the systemd driver spells "-" as "_", so an "_" could not be read back).
// Letters, digits, "-" and "." are what pod UIDs and QoS names use.
func ValidComponent(c string) error {
	if c == "" || c == "." || c == ".." || len(c) > 255 {
		return fmt.Errorf("cgroup name component %q: %w", c, ErrInvalidName)
	}
	for _, r := range c {
		ok := r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return fmt.Errorf("cgroup name component %q: character %q: %w", c, r, ErrInvalidName)
		}
	}
	return nil
}

// Cgroupfs is the name as the cgroupfs driver spells it: "/" and the
// components joined by "/".
func (n Name) Cgroupfs() string { return "/" + path.Join(n...) }

// Systemd is the name as the systemd driver spells it: each component is a
// slice whose name repeats its parents' ("-" in a component escaped as
// "_"), nested as systemd nests slices. The root is "/".
func (n Name) Systemd() string {
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for _, c := range n {
		unit := prefix + strings.ReplaceAll(c, "-", "_")
		b.WriteString("/")
		b.WriteString(unit)
		b.WriteString(".slice")
		prefix = unit + "-"
	}
	return b.String()
}

// ParseCgroupfs reads a cgroupfs path ("/kubepods/burstable") as a Name.
func ParseCgroupfs(p string) Name {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" {
		return Name{}
	}
	return Name(strings.Split(p, "/"))
}

// ParseSystemd reads a systemd slice (its full path or only its last
// unit, "kubepods-burstable.slice") as a Name.
func ParseSystemd(p string) Name {
	unit := strings.TrimSuffix(path.Base(p), ".slice")
	if unit == "" || unit == "/" || unit == "-" {
		return Name{}
	}
	parts := strings.Split(unit, "-")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(s, "_", "-")
	}
	return Name(parts)
}
