package cgroups_test

import (
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// What the runtime is told after a resize: the overhead as guaranteed
// resources, and the pod's cgroup less the overhead, as upstream's
// generateUpdatePodSandboxResourcesRequest.
func TestSandboxResources(t *testing.T) {
	res := func(r *runtimeapi.LinuxContainerResources) string {
		return fmt.Sprintf("shares=%d quota=%d period=%d memory=%d", r.GetCpuShares(), r.GetCpuQuota(), r.GetCpuPeriod(), r.GetMemoryLimitInBytes())
	}
	for _, tc := range []struct {
		name          string
		containers    string
		overhead      string
		opts          cgroups.PodOptions
		wantOverhead  string
		wantResources string
	}{
		{"guaranteed, no overhead", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi", "", cgroups.PodOptions{},
			"shares=0 quota=0 period=0 memory=0", "shares=512 quota=50000 period=100000 memory=67108864"},
		{"guaranteed with overhead: the pod's cgroup less it", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi", "cpu=100m,memory=8Mi", cgroups.PodOptions{},
			"shares=102 quota=10000 period=100000 memory=8388608", "shares=512 quota=50000 period=100000 memory=67108864"},
		{"burstable without limits: shares only", "cpu=250m/", "", cgroups.PodOptions{},
			"shares=0 quota=0 period=0 memory=0", "shares=256 quota=0 period=0 memory=0"},
		{"best effort", "", "", cgroups.PodOptions{},
			"shares=0 quota=0 period=0 memory=0", "shares=2 quota=0 period=0 memory=0"},
		{"a 50ms period", "cpu=1,memory=1Gi/cpu=1,memory=1Gi", "cpu=200m", cgroups.PodOptions{CPUPeriod: 50000},
			"shares=204 quota=10000 period=50000 memory=0", "shares=1024 quota=50000 period=50000 memory=1073741824"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("u", tc.containers)
			if tc.overhead != "" {
				p.Spec.Overhead = list(tc.overhead)
			}
			o, r := cgroups.SandboxResources(p, tc.opts)
			if got := res(o); got != tc.wantOverhead {
				t.Errorf("overhead %s, want %s", got, tc.wantOverhead)
			}
			if got := res(r); got != tc.wantResources {
				t.Errorf("resources %s, want %s", got, tc.wantResources)
			}
		})
	}
}
