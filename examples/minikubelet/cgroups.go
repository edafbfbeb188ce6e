package main

import (
	"errors"
	"os"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

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
