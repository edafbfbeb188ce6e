package cgroups_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
