package pleg

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// benchLists returns what a runtime would list for pods pods, each with a
// ready sandbox and two running containers; the first changed pods have their
// second container exited instead.
func benchLists(pods, changed int) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) {
	sbs := make([]*runtimeapi.PodSandbox, 0, pods)
	cs := make([]*runtimeapi.Container, 0, 2*pods)
	for i := range pods {
		uid := types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		sb := fmt.Sprintf("sandbox-%d", i)
		sbs = append(sbs, &runtimeapi.PodSandbox{
			Id:       sb,
			Metadata: &runtimeapi.PodSandboxMetadata{Uid: string(uid), Name: fmt.Sprintf("pod-%d", i), Namespace: "bench"},
			State:    runtimeapi.PodSandboxState_SANDBOX_READY,
			Labels:   cri.PodLabels(uid, fmt.Sprintf("pod-%d", i), "bench"),
		})
		for j, name := range []string{"app", "sidecar"} {
			st := runtimeapi.ContainerState_CONTAINER_RUNNING
			if j == 1 && i < changed {
				st = runtimeapi.ContainerState_CONTAINER_EXITED
			}
			cs = append(cs, &runtimeapi.Container{
				Id:           fmt.Sprintf("%s-%s", sb, name),
				PodSandboxId: sb,
				Metadata:     &runtimeapi.ContainerMetadata{Name: name},
				State:        st,
				Labels:       cri.ContainerLabels(uid, fmt.Sprintf("pod-%d", i), "bench", name),
			})
		}
	}
	return sbs, cs
}

var benchSizes = []int{100, 1000, 10000}

// trackerAfter returns a tracker that has delivered the first lists and
// observed the second.
func trackerAfter(first, second func() ([]*runtimeapi.PodSandbox, []*runtimeapi.Container)) *tracker {
	t := newTracker()
	t.observe(first())
	for _, ev := range t.diff(nil) {
		t.commit(ev.PodUID)
	}
	t.observe(second())
	return t
}

// BenchmarkDiff measures the diff of one relist against the delivered state:
// with nothing changed it must not allocate.
func BenchmarkDiff(b *testing.B) {
	for _, pods := range benchSizes {
		for _, c := range []struct {
			name    string
			changed int
		}{{"unchanged", 0}, {"changed=1%", pods / 100}} {
			sbs, cs := benchLists(pods, 0)
			t := trackerAfter(func() ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) { return sbs, cs },
				func() ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) { return benchLists(pods, c.changed) })
			b.Run(fmt.Sprintf("pods=%d/%s", pods, c.name), func(b *testing.B) {
				b.ReportAllocs()
				dst := make([]Event, 0, pods)
				var n int
				for b.Loop() {
					n = len(t.diff(dst[:0]))
				}
				require.Equal(b, c.changed, n)
			})
		}
	}
}

// BenchmarkObserve measures taking in a relist's lists: the same lists as
// last time (a runtime that lists in a stable order), and the same objects in
// a new order (one that does not, like containerd).
func BenchmarkObserve(b *testing.B) {
	for _, pods := range benchSizes {
		sbs, cs := benchLists(pods, 0)
		rs, rc := slices.Clone(sbs), slices.Clone(cs)
		slices.Reverse(rs)
		slices.Reverse(rc)
		for _, c := range []struct {
			name string
			sbs  []*runtimeapi.PodSandbox
			cs   []*runtimeapi.Container
		}{{"stable", sbs, cs}, {"reordered", rs, rc}} {
			b.Run(fmt.Sprintf("pods=%d/%s", pods, c.name), func(b *testing.B) {
				t := newTracker()
				t.observe(sbs, cs)
				b.ReportAllocs()
				flip := false
				for b.Loop() {
					// Alternate so that "reordered" never matches the
					// previous order.
					if flip {
						t.observe(sbs, cs)
					} else {
						t.observe(c.sbs, c.cs)
					}
					if c.name == "reordered" {
						flip = !flip
					}
				}
			})
		}
	}
}

func TestDiffDoesNotAllocate(t *testing.T) {
	sbs, cs := benchLists(1000, 0)
	same := func() ([]*runtimeapi.PodSandbox, []*runtimeapi.Container) { return sbs, cs }
	tr := trackerAfter(same, same)
	dst := make([]Event, 0, 16)
	allocs := testing.AllocsPerRun(10, func() { dst = tr.diff(dst[:0]) })
	require.Zero(t, allocs)
	require.Empty(t, dst)
	allocs = testing.AllocsPerRun(10, func() { tr.observe(sbs, cs) })
	require.Zero(t, allocs, "observing what was observed before does not allocate either")
}
