//go:build systemd && linux

package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

const systemdPod = `
apiVersion: v1
kind: Pod
metadata: {name: sd}
spec:
  containers:
  - name: web
    image: busybox:1.36
    command: [sleep, "3600"]
    resources:
      requests: {cpu: 100m}
      limits: {cpu: 500m, memory: 64Mi}
`

// TestSystemdDriverAgent runs an agent with Cgroups.Driver systemd against a
// real systemd (go test -tags systemd, as root, inside the namespaces of
// hack/systemd-start.sh's systemd: hack/systemd-test.sh), on its embedded
// fake runtime: the pod's slice is created over D-Bus before its sandbox,
// which gets it as its cgroup parent, and is stopped once the pod is gone;
// the agent's connection ends with Run (goleak checks).
func TestSystemdDriverAgent(t *testing.T) {
	if _, err := os.Stat("/run/systemd/private"); err != nil {
		t.Fatalf("no systemd here (%v): run this test through hack/systemd-test.sh", err)
	}
	ctx := context.Background()
	view, err := sddbus.NewSystemdConnectionContext(ctx)
	require.NoError(t, err)
	defer view.Close()
	// Registered first, so it runs last: the slices the agent leaves.
	t.Cleanup(func() {
		for _, u := range []string{"kubepods-besteffort.slice", "kubepods-burstable.slice", "kubepods.slice"} {
			ch := make(chan string, 1)
			if _, err := view.StopUnitContext(ctx, u, "replace", ch); err == nil {
				<-ch
			}
		}
	})
	state := func(unit, property string) any {
		t.Helper()
		p, err := view.GetUnitTypePropertyContext(ctx, unit, "Slice", property)
		require.NoError(t, err, unit)
		return p.Value.Value()
	}

	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	rt.SetCgroupDriver(runtimeapi.CgroupDriver_SYSTEMD) // the runtime's driver is the one used
	n := newNodeWith(t, agent.Options{
		Runtime: rt,
		Cgroups: agent.CgroupOptions{PerQOS: true, Driver: "systemd", EnforceNodeAllocatable: []string{agent.EnforcePods}},
	})
	require.Equal(t, "/kubepods.slice", state("kubepods.slice", "ControlGroup"))

	n.write("sd.yaml", systemdPod)
	p := n.waitPod("sd-node1", "running", func(p v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	unit := "kubepods-burstable-pod" + strings.ReplaceAll(string(p.UID), "-", "_") + ".slice"
	slice := "/kubepods.slice/kubepods-burstable.slice/" + unit
	var parents []string
	for _, c := range rt.CallsOf(fake.RunPodSandbox) {
		parents = append(parents, c.Request.(*runtimeapi.RunPodSandboxRequest).GetConfig().GetLinux().GetCgroupParent())
	}
	require.Equal(t, []string{slice}, parents, "the sandbox's cgroup parent")
	require.Equal(t, slice, state(unit, "ControlGroup"))
	require.Equal(t, "active", unitState(t, view, unit))
	require.Equal(t, uint64(500000), state(unit, "CPUQuotaPerSecUSec"))
	limit, dir := "MemoryLimit", filepath.Join("/sys/fs/cgroup/systemd", slice)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // v2
		limit, dir = "MemoryMax", filepath.Join("/sys/fs/cgroup", slice)
	}
	require.Equal(t, uint64(64<<20), state(unit, limit))
	require.DirExists(t, dir)

	// The pod gone, its slice is stopped.
	require.NoError(t, os.Remove(filepath.Join(n.manifests, "sd.yaml")))
	deadline := time.Now().Add(30 * time.Second)
	for unitState(t, view, unit) == "active" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	require.Equal(t, "inactive", unitState(t, view, unit), "the slice of the pod gone")
	require.NoDirExists(t, dir)
	n.stop()
}

func unitState(t *testing.T, view *sddbus.Conn, unit string) string {
	t.Helper()
	p, err := view.GetUnitPropertyContext(context.Background(), unit, "ActiveState")
	require.NoError(t, err, unit)
	s, _ := p.Value.Value().(string)
	return s
}
