package podspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/podspec"
)

func ctr(cpu string, sidecar bool) v1.Container {
	c := v1.Container{Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	return c
}

func TestEffective(t *testing.T) {
	for _, tc := range []struct {
		name       string
		init, main []v1.Container
		want       string
		needs      int
	}{
		{"containers add up", nil, []v1.Container{ctr("100m", false), ctr("200m", false)}, "300m", 2},
		{"a larger init container wins", []v1.Container{ctr("1", false)}, []v1.Container{ctr("100m", false)}, "1", 2},
		{"sidecars add up and count in a later init container's need",
			[]v1.Container{ctr("200m", true), ctr("500m", false)}, []v1.Container{ctr("100m", false)}, "700m", 3},
		{"a sidecar after the init container does not", []v1.Container{ctr("500m", false), ctr("200m", true)},
			[]v1.Container{ctr("100m", false)}, "500m", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.init, Containers: tc.main}}
			needs := 0
			got := podspec.EffectiveResources(pod, podspec.ContainerRequests, func(v1.ResourceList) { needs++ })
			cpu := got[v1.ResourceCPU]
			assert.Equal(t, tc.want, cpu.String())
			assert.Equal(t, tc.needs, needs)
		})
	}
	assert.True(t, podspec.IsPodLevelResource("hugepages-2Mi"))
	assert.False(t, podspec.IsPodLevelResource(v1.ResourceEphemeralStorage))
}

func TestRequests(t *testing.T) {
	withInit := func(p *v1.Pod, inits ...v1.Container) *v1.Pod { p.Spec.InitContainers = inits; return p }
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want v1.ResourceList
	}{
		{"nothing", podOf(reqCtr("a")), list()},
		{"containers add up", podOf(reqCtr("a", "cpu", "100m", "memory", "1Gi"), reqCtr("b", "cpu", "200m")), list("cpu", "300m", "memory", "1Gi")},
		{"a larger init container wins", withInit(podOf(reqCtr("a", "cpu", "100m")), reqCtr("i", "cpu", "1", "memory", "10Mi")),
			list("cpu", "1", "memory", "10Mi")},
		{"a smaller init container does not", withInit(podOf(reqCtr("a", "cpu", "2")), reqCtr("i", "cpu", "1")), list("cpu", "2")},
		{"sidecars add to the containers", withInit(podOf(reqCtr("a", "memory", "100Mi")), sidecar("s", "memory", "50Mi")),
			list("memory", "150Mi")},
		{"an init container after a sidecar needs both", withInit(podOf(reqCtr("a", "memory", "100Mi")),
			sidecar("s", "memory", "50Mi"), reqCtr("i", "memory", "200Mi")), list("memory", "250Mi")},
		{"an init container before a sidecar needs itself", withInit(podOf(reqCtr("a", "memory", "100Mi")),
			reqCtr("i", "memory", "120Mi"), sidecar("s", "memory", "50Mi")), list("memory", "150Mi")},
		{"pod-level requests replace the containers'", func() *v1.Pod {
			p := podOf(reqCtr("a", "cpu", "100m", "memory", "1Gi", "ephemeral-storage", "1Gi"))
			p.Spec.Resources = &v1.ResourceRequirements{Requests: list("cpu", "2")}
			return p
		}(), list("cpu", "2", "memory", "1Gi", "ephemeral-storage", "1Gi")},
		{"overhead adds", func() *v1.Pod {
			p := podOf(reqCtr("a", "cpu", "100m"))
			p.Spec.Overhead = list("cpu", "50m", "memory", "20Mi")
			return p
		}(), list("cpu", "150m", "memory", "20Mi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertResources(t, tc.want, podspec.Requests(tc.pod))
		})
	}
}

// assertResources checks that got has want's quantities and no other.
func assertResources(t *testing.T, want, got v1.ResourceList) {
	t.Helper()
	assert.Len(t, got, len(want), "%v", got)
	for name, q := range want {
		g := got[name]
		assert.Zero(t, q.Cmp(g), "%s: want %s, got %s", name, q.String(), g.String())
	}
}

func TestLimits(t *testing.T) {
	limCtr := func(name string, limits ...string) v1.Container {
		return v1.Container{Name: name, Resources: v1.ResourceRequirements{Limits: list(limits...)}}
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want v1.ResourceList
	}{
		{"nothing", podOf(limCtr("a")), list()},
		{"containers add up", podOf(limCtr("a", "cpu", "1", "memory", "1Gi"), limCtr("b", "cpu", "500m")), list("cpu", "1500m", "memory", "1Gi")},
		{"pod-level limits replace the containers'", func() *v1.Pod {
			p := podOf(limCtr("a", "cpu", "1", "ephemeral-storage", "1Gi"))
			p.Spec.Resources = &v1.ResourceRequirements{Limits: list("cpu", "2", "memory", "512Mi")}
			return p
		}(), list("cpu", "2", "memory", "512Mi", "ephemeral-storage", "1Gi")},
		{"pod-level requests alone keep the containers' limits", func() *v1.Pod {
			p := podOf(limCtr("a", "cpu", "1"))
			p.Spec.Resources = &v1.ResourceRequirements{Requests: list("cpu", "500m")}
			return p
		}(), list("cpu", "1")},
		{"overhead adds to the limits set only", func() *v1.Pod {
			p := podOf(limCtr("a", "cpu", "1"))
			p.Spec.Overhead = list("cpu", "50m", "memory", "20Mi")
			return p
		}(), list("cpu", "1050m")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertResources(t, tc.want, podspec.Limits(tc.pod))
		})
	}
}

// A container's unset or zero limit reads, through the downward API, as the
// pod's own limit of cpu or memory (pod-level resources), else as the node's
// allocatable, as upstream's kubelet defaults it.
func TestDownwardAPILimit(t *testing.T) {
	alloc := list("cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi")
	withPod := func(c v1.Container, limits v1.ResourceList) *v1.Pod {
		p := podOf(c)
		if limits != nil {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: limits}
		}
		return p
	}
	own := v1.Container{Name: "a", Resources: v1.ResourceRequirements{Limits: list("cpu", "500m", "memory", "0")}}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		resource v1.ResourceName
		alloc    v1.ResourceList
		want     string // "" for none
	}{
		{"the container's own", withPod(own, list("cpu", "2")), "cpu", alloc, "500m"},
		{"a zero limit is unset", withPod(own, nil), "memory", alloc, "8Gi"},
		{"the pod's", withPod(own, list("memory", "64Mi")), "memory", alloc, "64Mi"},
		{"the node's, the pod limiting another", withPod(v1.Container{Name: "a"}, list("cpu", "2")), "memory", alloc, "8Gi"},
		{"ephemeral storage is no pod-level resource", withPod(v1.Container{Name: "a"}, list("memory", "1Gi", "ephemeral-storage", "1Gi")), "ephemeral-storage", alloc, "100Gi"},
		{"the pod's, not when the node does not list it", withPod(v1.Container{Name: "a"}, list("memory", "64Mi")), "memory", list("cpu", "4"), ""},
		{"none", withPod(v1.Container{Name: "a"}, nil), "memory", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.alloc.DeepCopy()
			q, ok := podspec.DownwardAPILimit(tc.pod, &tc.pod.Spec.Containers[0], tc.resource, tc.alloc)
			if tc.want == "" {
				assert.False(t, ok)
			} else if assert.True(t, ok) {
				want := resource.MustParse(tc.want)
				assert.Zero(t, want.Cmp(q), "got %s", q.String())
			}
			assert.Equal(t, before, tc.alloc, "the allocatable is not modified")
		})
	}
}

func TestHugePageSize(t *testing.T) {
	for name, want := range map[v1.ResourceName]int64{
		"hugepages-2Mi": 2 << 20, "hugepages-1Gi": 1 << 30, "hugepages-64Ki": 64 << 10,
		"hugepages-0": 0, "hugepages-x": 0, "memory": 0, "hugepages--2Mi": 0,
	} {
		got, ok := podspec.HugePageSize(name)
		assert.Equal(t, want, got, name)
		assert.Equal(t, want != 0, ok, name)
	}
}

func TestHugePageUnitSize(t *testing.T) {
	for bytes, want := range map[int64]string{
		2 << 20: "2MB", 1 << 30: "1GB", 64 << 10: "64KB", 32 << 20: "32MB", 16 << 30: "16GB", 512: "512B", 1536: "1536B", 1 << 50: "1PB",
	} {
		assert.Equal(t, want, podspec.HugePageUnitSize(bytes), bytes)
	}
}
