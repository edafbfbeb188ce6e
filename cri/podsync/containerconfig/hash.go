package containerconfig

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer returns the hash of the parts of a container's spec that
// need a restart to change: name, image, command, args, working dir, ports,
// env, volume mounts, restart policy, probes' presence, lifecycle hooks'
// presence, security context basics and stdin/tty. Resources are left out,
// as upstream leaves them out (they may change in place). It is FNV-1a over
// the fields, computed without allocating; ContainerConfig stores it in
// the container's cri.ContainerHashAnnotation, and podsync.ComputeActions
// restarts a running container whose annotation differs.
func HashContainer(c *v1.Container) uint64 {
	h := hasher(14695981039346656037)
	h.str(c.Name)
	h.str(c.Image)
	h.strs(c.Command)
	h.sep()
	h.strs(c.Args)
	h.sep()
	h.str(c.WorkingDir)
	for i := range c.Ports {
		p := &c.Ports[i]
		h.str(p.Name)
		h.int(int64(p.ContainerPort))
		h.int(int64(p.HostPort))
		h.str(string(p.Protocol))
		h.str(p.HostIP)
	}
	h.sep()
	for i := range c.Env {
		e := &c.Env[i]
		h.str(e.Name)
		h.str(e.Value)
		if vf := e.ValueFrom; vf != nil {
			if vf.FieldRef != nil {
				h.str(vf.FieldRef.FieldPath)
			}
			if vf.ResourceFieldRef != nil {
				h.str(vf.ResourceFieldRef.ContainerName)
				h.str(vf.ResourceFieldRef.Resource)
				h.str(vf.ResourceFieldRef.Divisor.String())
			}
			if vf.ConfigMapKeyRef != nil {
				h.str(vf.ConfigMapKeyRef.Name)
				h.str(vf.ConfigMapKeyRef.Key)
			}
			if vf.SecretKeyRef != nil {
				h.str(vf.SecretKeyRef.Name)
				h.str(vf.SecretKeyRef.Key)
			}
		}
	}
	h.sep()
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		h.str(m.Name)
		h.str(m.MountPath)
		h.str(m.SubPath)
		h.bool(m.ReadOnly)
		if m.MountPropagation != nil {
			h.str(string(*m.MountPropagation))
		}
	}
	h.sep()
	if c.RestartPolicy != nil {
		h.str(string(*c.RestartPolicy))
	}
	h.bool(c.LivenessProbe != nil)
	h.bool(c.ReadinessProbe != nil)
	h.bool(c.StartupProbe != nil)
	h.bool(c.Lifecycle != nil && c.Lifecycle.PreStop != nil)
	h.bool(c.Lifecycle != nil && c.Lifecycle.PostStart != nil)
	h.str(c.TerminationMessagePath)
	h.str(string(c.TerminationMessagePolicy))
	h.str(string(c.ImagePullPolicy))
	h.bool(c.Stdin)
	h.bool(c.StdinOnce)
	h.bool(c.TTY)
	if sc := c.SecurityContext; sc != nil {
		if sc.Privileged != nil {
			h.bool(*sc.Privileged)
		}
		if sc.RunAsUser != nil {
			h.int(*sc.RunAsUser)
		}
		if sc.RunAsGroup != nil {
			h.int(*sc.RunAsGroup)
		}
		if sc.ReadOnlyRootFilesystem != nil {
			h.bool(*sc.ReadOnlyRootFilesystem)
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				h.str(string(c))
			}
			h.sep()
			for _, c := range sc.Capabilities.Drop {
				h.str(string(c))
			}
		}
	}
	return uint64(h)
}

// FormatHash formats a hash as ContainerHashAnnotation holds it.
func FormatHash(h uint64) string { return strconv.FormatUint(h, 16) }

type hasher uint64

const fnvPrime = 1099511628211

func (h *hasher) byte(b byte) { *h = (*h ^ hasher(b)) * fnvPrime }

func (h *hasher) str(s string) {
	for i := 0; i < len(s); i++ {
		h.byte(s[i])
	}
	h.byte(0)
}

func (h *hasher) strs(ss []string) {
	for _, s := range ss {
		h.str(s)
	}
}

func (h *hasher) sep() { h.byte(0xff) }

func (h *hasher) int(v int64) {
	for i := 0; i < 8; i++ {
		h.byte(byte(v >> (8 * i)))
	}
}

func (h *hasher) bool(b bool) {
	if b {
		h.byte(1)
	} else {
		h.byte(2)
	}
}
