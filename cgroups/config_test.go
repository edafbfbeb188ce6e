package cgroups_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// show prints a ResourceConfig's set fields in a fixed order.
func show(rc cgroups.ResourceConfig) string {
	var parts []string
	if rc.CPUShares != nil {
		parts = append(parts, fmt.Sprintf("shares=%d", *rc.CPUShares))
	}
	if rc.CPUQuota != nil {
		parts = append(parts, fmt.Sprintf("quota=%d", *rc.CPUQuota))
	}
	if rc.CPUPeriod != nil {
		parts = append(parts, fmt.Sprintf("period=%d", *rc.CPUPeriod))
	}
	if rc.Memory != nil {
		parts = append(parts, fmt.Sprintf("memory=%d", *rc.Memory))
	}
	if rc.PidsLimit != nil {
		parts = append(parts, fmt.Sprintf("pids=%d", *rc.PidsLimit))
	}
	for _, size := range slices.Sorted(maps.Keys(rc.HugePageLimits)) {
		parts = append(parts, fmt.Sprintf("hugepages-%d=%d", size, rc.HugePageLimits[size]))
	}
	return strings.Join(parts, " ")
}

func TestPodConfig(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	withInit := func(p *v1.Pod, sidecar bool, reqs, lims string) *v1.Pod {
		c := v1.Container{Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)),
			Resources: v1.ResourceRequirements{Requests: list(reqs), Limits: list(lims)}}
		if sidecar {
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		return p
	}
	withOverhead := func(p *v1.Pod, o string) *v1.Pod { p.Spec.Overhead = list(o); return p }
	withPodLevel := func(p *v1.Pod, reqs, lims string) *v1.Pod {
		p.Spec.Resources = &v1.ResourceRequirements{Requests: list(reqs), Limits: list(lims)}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		opts cgroups.PodOptions
		want string
	}{
		{"best effort", pod("u", ""), cgroups.PodOptions{}, "shares=2"},
		{"guaranteed", pod("u", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi"), cgroups.PodOptions{},
			"shares=512 quota=50000 period=100000 memory=67108864"},
		{"guaranteed, two containers", pod("u", "cpu=1,memory=1Gi/cpu=1,memory=1Gi", "cpu=250m,memory=1Mi/cpu=250m,memory=1Mi"), cgroups.PodOptions{},
			"shares=1280 quota=125000 period=100000 memory=1074790400"},
		{"guaranteed, quota off", pod("u", "cpu=1,memory=1Gi/cpu=1,memory=1Gi"), cgroups.PodOptions{DisableCPUQuota: true},
			"shares=1024 quota=-1 period=100000 memory=1073741824"},
		{"guaranteed, 50ms period: the quota halves", pod("u", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi"), cgroups.PodOptions{CPUPeriod: 50000},
			"shares=512 quota=25000 period=50000 memory=67108864"},
		{"burstable, 1s period", pod("u", "cpu=100m,memory=32Mi/cpu=200m,memory=64Mi"), cgroups.PodOptions{CPUPeriod: 1000000},
			"shares=102 quota=200000 period=1000000 memory=67108864"},
		{"guaranteed, tiny cpu", pod("u", "cpu=1m,memory=1Mi/cpu=1m,memory=1Mi"), cgroups.PodOptions{CPUPeriod: 50000},
			"shares=2 quota=1000 period=50000 memory=1048576"},
		{"burstable, requests only", pod("u", "cpu=250m,memory=32Mi/"), cgroups.PodOptions{}, "shares=256"},
		{"burstable, both limits", pod("u", "cpu=100m,memory=32Mi/cpu=200m,memory=64Mi"), cgroups.PodOptions{},
			"shares=102 quota=20000 period=100000 memory=67108864"},
		{"burstable, one container without limits", pod("u", "cpu=100m/cpu=200m,memory=64Mi", "memory=1Mi/"), cgroups.PodOptions{},
			"shares=102"},
		{"burstable, memory limit only", pod("u", "/memory=64Mi"), cgroups.PodOptions{},
			"shares=2 memory=67108864"},
		{"burstable, limit without request defaults nothing at pod level", pod("u", "/cpu=2"), cgroups.PodOptions{},
			"shares=2 quota=200000 period=100000"},
		{"init container larger than the app", withInit(pod("u", "cpu=100m/cpu=100m,memory=10Mi"), false, "cpu=1", "cpu=2,memory=20Mi"), cgroups.PodOptions{},
			"shares=1024 quota=200000 period=100000 memory=20971520"},
		{"sidecar added", withInit(pod("u", "cpu=100m/cpu=100m,memory=10Mi"), true, "cpu=100m", "cpu=100m,memory=10Mi"), cgroups.PodOptions{},
			"shares=204 quota=20000 period=100000 memory=20971520"},
		{"init container without limits", withInit(pod("u", "cpu=100m/cpu=100m,memory=10Mi"), false, "cpu=10m", ""), cgroups.PodOptions{},
			"shares=102"},
		{"overhead", withOverhead(pod("u", "cpu=1,memory=1Gi/cpu=1,memory=1Gi"), "cpu=250m,memory=120Mi"), cgroups.PodOptions{},
			"shares=1280 quota=125000 period=100000 memory=1199570944"},
		{"overhead not added to an unset limit", withOverhead(pod("u", "cpu=1/memory=1Gi"), "cpu=250m,memory=1Mi"), cgroups.PodOptions{},
			"shares=1280 memory=1074790400"},
		{"pod-level limits", withPodLevel(pod("u", "cpu=100m/"), "cpu=500m", "cpu=1,memory=256Mi"), cgroups.PodOptions{},
			"shares=512 quota=100000 period=100000 memory=268435456"},
		{"pids limit", pod("u", ""), cgroups.PodOptions{PidsLimit: 100}, "shares=2 pids=100"},
		{"huge pages", pod("u", "cpu=1,memory=1Gi,hugepages-2Mi=4Mi/cpu=1,memory=1Gi,hugepages-2Mi=4Mi"), cgroups.PodOptions{},
			"shares=1024 quota=100000 period=100000 memory=1073741824 hugepages-2097152=4194304"},
		{"huge pages, the node's other sizes at 0", pod("u", "cpu=1,memory=1Gi,hugepages-2Mi=4Mi/cpu=1,memory=1Gi,hugepages-2Mi=4Mi"),
			cgroups.PodOptions{HugePageSizes: []int64{2 << 20, 1 << 30}},
			"shares=1024 quota=100000 period=100000 memory=1073741824 hugepages-2097152=4194304 hugepages-1073741824=0"},
		{"no huge pages asked: 0 for every size", pod("u", "cpu=100m/"), cgroups.PodOptions{HugePageSizes: []int64{2 << 20, 1 << 30}},
			"shares=102 hugepages-2097152=0 hugepages-1073741824=0"},
		{"pod-level huge pages", withPodLevel(pod("u", "cpu=100m/"), "cpu=500m,hugepages-1Gi=1Gi", "cpu=1,memory=2Gi,hugepages-1Gi=1Gi"),
			cgroups.PodOptions{HugePageSizes: []int64{2 << 20, 1 << 30}},
			"shares=512 quota=100000 period=100000 memory=2147483648 hugepages-2097152=0 hugepages-1073741824=1073741824"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(cgroups.PodConfig(tc.pod, tc.opts)); got != tc.want {
				t.Errorf("PodConfig = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCPUConversions(t *testing.T) {
	for _, tc := range []struct {
		milli          int64
		shares, weight uint64
		quota          int64
	}{
		{0, 2, 1, 0},
		{1, 2, 1, 1000},
		{10, 10, 1, 1000},
		{100, 102, 4, 10000},
		{1000, 1024, 39, 100000},
		{256000, 262144, 10000, 25600000},
		{512000, 262144, 10000, 51200000},
	} {
		t.Run(fmt.Sprint(tc.milli), func(t *testing.T) {
			s := cgroups.MilliCPUToShares(tc.milli)
			if s != tc.shares {
				t.Errorf("MilliCPUToShares(%d) = %d, want %d", tc.milli, s, tc.shares)
			}
			if w := cgroups.SharesToWeight(s); w != tc.weight {
				t.Errorf("SharesToWeight(%d) = %d, want %d", s, w, tc.weight)
			}
			if q := cgroups.MilliCPUToQuota(tc.milli, cgroups.QuotaPeriod); q != tc.quota {
				t.Errorf("MilliCPUToQuota(%d) = %d, want %d", tc.milli, q, tc.quota)
			}
		})
	}
}

func TestNodeAndQOSConfigs(t *testing.T) {
	node := cgroups.NodeConfig(list("cpu=2,memory=4Gi,pid=4194304,pods=110"))
	if got, want := show(node), "shares=2048 memory=4294967296 pids=4194304"; got != want {
		t.Errorf("NodeConfig = %q, want %q", got, want)
	}
	active := []*v1.Pod{pod("a", "cpu=100m/"), pod("b", "cpu=250m/cpu=1"), pod("g", "cpu=1,memory=1Mi/cpu=1,memory=1Mi"), pod("e", "")}
	qos := cgroups.QOSConfigs(active)
	if got := show(qos[v1.PodQOSBurstable]); got != "shares=358" {
		t.Errorf("burstable = %q, want shares=358", got)
	}
	if got := show(qos[v1.PodQOSBestEffort]); got != "shares=2" {
		t.Errorf("besteffort = %q, want shares=2", got)
	}
}

func BenchmarkPodConfig(b *testing.B) {
	for _, n := range []int{1, 10} {
		specs := make([]string, n)
		for i := range specs {
			specs[i] = "cpu=100m,memory=64Mi/cpu=200m,memory=128Mi"
		}
		p := pod("u", specs...)
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = cgroups.PodConfig(p, cgroups.PodOptions{})
			}
		})
	}
	pods := make([]*v1.Pod, 1000)
	for i := range pods {
		pods[i] = pod(fmt.Sprint(i), "cpu=100m/")
	}
	b.Run("qos/pods=1000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = cgroups.QOSConfigs(pods)
		}
	})
}
