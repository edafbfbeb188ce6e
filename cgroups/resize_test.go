package cgroups_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cgroups"
)

// ResizePod grows what rises before the containers change and shrinks
// what falls after: each call writes only its direction.
func TestResizePod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fake  func(testing.TB) string
		files func() (shares, quota, memory string)
		// the values before, after the grow and after the shrink
		want [3][3]string
	}{
		{name: "v1", fake: fakeV1,
			files: func() (string, string, string) {
				return "cpu/kubepods/podg/cpu.shares", "cpu/kubepods/podg/cpu.cfs_quota_us", "memory/kubepods/podg/memory.limit_in_bytes"
			},
			want: [3][3]string{{"512", "50000", "67108864"}, {"1024", "100000", "67108864"}, {"1024", "100000", "33554432"}}},
		{name: "v2", fake: fakeV2,
			files: func() (string, string, string) {
				return "kubepods/podg/cpu.weight", "kubepods/podg/cpu.max", "kubepods/podg/memory.max"
			},
			want: [3][3]string{{"20", "50000 100000", "67108864"}, {"39", "100000 100000", "67108864"}, {"39", "100000 100000", "33554432"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.fake(t)
			m, _ := newManager(t, root, cgroups.Options{})
			if err := m.Start(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			// A Guaranteed pod stays Guaranteed: its CPU rises, its
			// memory falls.
			before := pod("g", "cpu=500m,memory=64Mi/cpu=500m,memory=64Mi")
			if err := m.EnsurePod(before); err != nil {
				t.Fatal(err)
			}
			shares, quota, memory := tc.files()
			check := func(step int) {
				t.Helper()
				for i, f := range []string{shares, quota, memory} {
					if got := read(t, filepath.Join(root, f)); got != tc.want[step][i] {
						t.Errorf("step %d: %s = %q, want %q", step, f, got, tc.want[step][i])
					}
				}
			}
			check(0)
			after := pod("g", "cpu=1,memory=32Mi/cpu=1,memory=32Mi")
			if err := m.ResizePod(after, true); err != nil {
				t.Fatal(err)
			}
			check(1)
			if err := m.ResizePod(after, false); err != nil {
				t.Fatal(err)
			}
			check(2)
			if err := m.ResizePod(pod("none", "cpu=1"), true); err != nil {
				t.Errorf("a pod without a cgroup: %v", err)
			}
		})
	}
}

func TestResizePodUnreadable(t *testing.T) {
	root := fakeV2(t)
	m, _ := newManager(t, root, cgroups.Options{})
	if err := m.Start(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	p := pod("b", "cpu=100m/memory=1Gi")
	if err := m.EnsurePod(p); err != nil {
		t.Fatal(err)
	}
	// A fake tree has no cpu.max where nothing was written: the error
	// names the file.
	if err := os.Remove(filepath.Join(root, "kubepods/burstable/podb/cpu.max")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	err := m.ResizePod(pod("b", "cpu=200m/memory=1Gi"), true)
	if err == nil || !strings.Contains(err.Error(), "cpu.max") {
		t.Fatalf("ResizePod = %v, want an error naming cpu.max", err)
	}
}

// podLevel is a pod of one container without resources and pod-level
// requests and limits ("cpu=1,memory=64Mi/cpu=1,memory=64Mi").
func podLevel(uid, resources string) *v1.Pod {
	p := pod(uid, "")
	reqs, lims, _ := strings.Cut(resources, "/")
	p.Spec.Resources = &v1.ResourceRequirements{Requests: list(reqs), Limits: list(lims)}
	return p
}

// A pod-level resize (upstream's InPlacePodLevelResourcesVerticalScaling):
// the pod's cgroup follows its spec.resources, PodResized says when it
// has, PodResources reads it back in the pod's units, and a memory limit
// below what the pod uses is refused before anything is written.
func TestResizePodLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		fake func(testing.TB) string
		// usage is the pod cgroup's memory usage file
		usage string
		// the CPU request read back before and after: v2's weight
		// stands for fewer shares than were asked
		cpuBefore, cpuAfter string
	}{
		{name: "v1", fake: fakeV1, usage: "memory/kubepods/podplr/memory.usage_in_bytes", cpuBefore: "500m", cpuAfter: "1"},
		{name: "v2", fake: fakeV2, usage: "kubepods/podplr/memory.current", cpuBefore: "489m", cpuAfter: "975m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.fake(t)
			m, _ := newManager(t, root, cgroups.Options{})
			if err := m.Start(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			before := podLevel("plr", "cpu=500m,memory=128Mi/cpu=500m,memory=128Mi")
			if err := m.EnsurePod(before); err != nil {
				t.Fatal(err)
			}
			resized := func(p *v1.Pod) bool {
				t.Helper()
				ok, err := m.PodResized(p)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !resized(before) {
				t.Error("PodResized(pod as created) = false")
			}
			after := podLevel("plr", "cpu=1,memory=64Mi/cpu=1,memory=64Mi")
			if resized(after) {
				t.Error("PodResized(pod resized, cgroup not) = true")
			}
			// The pod uses 100Mi: 64Mi is refused, nothing written.
			write(t, filepath.Join(root, tc.usage), "104857600\n")
			err := m.ResizePod(after, true)
			if err == nil || !strings.Contains(err.Error(), "attempting to set pod memory limit (67108864) below current usage (104857600)") {
				t.Fatalf("ResizePod below usage: %v", err)
			}
			if got := format(t, m, before); got != "requests cpu="+tc.cpuBefore+"; limits cpu=500m memory=128Mi" {
				t.Errorf("after a refused resize: %s", got)
			}
			write(t, filepath.Join(root, tc.usage), "1048576\n")
			if err := m.ResizePod(after, true); err != nil {
				t.Fatal(err)
			}
			if got := format(t, m, before); got != "requests cpu="+tc.cpuAfter+"; limits cpu=1 memory=128Mi" {
				t.Errorf("after the grow: %s", got)
			}
			if resized(after) {
				t.Error("PodResized after the grow alone = true")
			}
			if err := m.ResizePod(after, false); err != nil {
				t.Fatal(err)
			}
			if got := format(t, m, before); got != "requests cpu="+tc.cpuAfter+"; limits cpu=1 memory=64Mi" {
				t.Errorf("after the shrink: %s", got)
			}
			if !resized(after) {
				t.Error("PodResized after the resize = false")
			}
			if r, err := m.PodResources(podLevel("none", "cpu=1/cpu=1")); r != nil || err != nil {
				t.Errorf("PodResources(no cgroup) = %v, %v", r, err)
			}
		})
	}
}

// format prints what PodResources reads of a pod's cgroup.
func format(t *testing.T, m *cgroups.Manager, p *v1.Pod) string {
	t.Helper()
	r, err := m.PodResources(p)
	if err != nil {
		t.Fatal(err)
	}
	q := func(l v1.ResourceList, name v1.ResourceName) string {
		if v, ok := l[name]; ok {
			return " " + string(name) + "=" + v.String()
		}
		return ""
	}
	return "requests" + q(r.Requests, v1.ResourceCPU) + "; limits" + q(r.Limits, v1.ResourceCPU) + q(r.Limits, v1.ResourceMemory)
}
