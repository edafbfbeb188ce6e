//go:build linux

package stats_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/stats"
)

const Gi = 1 << 30

func TestLinuxHostFixtures(t *testing.T) {
	cases := []struct {
		dir, pods                 string
		wantAvail, wantWS, wantUs uint64
		wantPodsUsage             uint64
	}{
		// v1: root usage 6Gi - total_inactive_file 2Gi.
		{dir: "v1", pods: "/kubepods", wantAvail: 4 * Gi, wantWS: 4 * Gi, wantUs: 6 * Gi, wantPodsUsage: 3 * Gi},
		// v2: the root has no memory.current: MemTotal-MemFree (7Gi) - inactive_file 1Gi.
		{dir: "v2", pods: "/kubepods.slice", wantAvail: 2 * Gi, wantWS: 6 * Gi, wantUs: 7 * Gi, wantPodsUsage: 5 * Gi / 2},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			root := filepath.Join("testdata", tc.dir)
			h := stats.NewLinuxHost(stats.LinuxHostOptions{ProcRoot: filepath.Join(root, "proc"), CgroupRoot: filepath.Join(root, "cgroup"), Clock: clk})
			ns, err := h.Node(context.Background(), false)
			require.NoError(t, err)
			assert.True(t, ns.StartTime.Time.Equal(boot), "btime of /proc/stat")
			assert.Equal(t, uint64(1234567890000), *ns.CPU.UsageCoreNanoSeconds)
			assert.True(t, ns.CPU.Time.Time.Equal(t0))
			m := ns.Memory
			assert.Equal(t, tc.wantAvail, *m.AvailableBytes)
			assert.Equal(t, tc.wantWS, *m.WorkingSetBytes)
			assert.Equal(t, tc.wantUs, *m.UsageBytes)
			assert.Equal(t, uint64(2*Gi), *m.RSSBytes)
			assert.Equal(t, uint64(1000), *m.PageFaults)
			assert.Equal(t, uint64(10), *m.MajorPageFaults)
			require.NotNil(t, ns.Network)
			assert.Equal(t, "eth0", ns.Network.Name)
			assert.Equal(t, uint64(123456), *ns.Network.RxBytes)
			assert.Equal(t, uint64(2), *ns.Network.TxErrors)
			var names []string
			for _, i := range ns.Network.Interfaces {
				names = append(names, i.Name)
			}
			assert.Equal(t, []string{"eth0", "cni0"}, names, "no loopback, no veth")
			assert.Equal(t, int64(126000), *ns.Rlimit.MaxPID)
			assert.Equal(t, int64(1234), *ns.Rlimit.NumOfRunningProcesses)

			only, err := h.Node(context.Background(), true)
			require.NoError(t, err)
			assert.Nil(t, only.Network)
			assert.Nil(t, only.Rlimit)

			cs, err := h.Cgroup(context.Background(), tc.pods)
			require.NoError(t, err)
			assert.Equal(t, uint64(300*time.Second), *cs.CPU.UsageCoreNanoSeconds)
			assert.Equal(t, tc.wantPodsUsage, *cs.Memory.UsageBytes)
			assert.Equal(t, uint64(2*Gi), *cs.Memory.WorkingSetBytes)
			assert.Equal(t, uint64(Gi), *cs.Memory.RSSBytes)
			assert.Equal(t, uint64(2*Gi), *cs.Memory.AvailableBytes, "its limit (4Gi) minus its working set")
			assert.False(t, cs.StartTime.Time.Before(boot), "not before boot")

			_, err = h.Cgroup(context.Background(), "/kubepods/../../etc")
			assert.ErrorContains(t, err, "not a path inside the hierarchy")
			_, err = h.Cgroup(context.Background(), "/missing")
			assert.Error(t, err)

			fsInfo, err := h.Filesystem(context.Background(), root)
			require.NoError(t, err)
			assert.Positive(t, fsInfo.CapacityBytes)
			_, err = h.Filesystem(context.Background(), filepath.Join(root, "missing"))
			assert.Error(t, err)
		})
	}
}

// TestLinuxRealNode builds summaries of this machine, with its real host
// and the fake runtime, and checks that the node's CPU and memory are
// there and plausible.
func TestLinuxRealNode(t *testing.T) {
	rt := fake.New(fake.Options{})
	defer rt.Close()
	p, err := stats.New(stats.Options{NodeName: "real", Runtime: rt, RootDir: t.TempDir(), PodLogsDir: t.TempDir(), CPUSamplePeriod: -1})
	require.NoError(t, err)
	s, err := p.Summary(context.Background(), false)
	require.NoError(t, err)
	n := s.Node
	assert.Positive(t, *n.CPU.UsageCoreNanoSeconds)
	total := *n.Memory.AvailableBytes + *n.Memory.WorkingSetBytes
	assert.Greater(t, total, uint64(64<<20), "more than 64Mi of memory")
	assert.Less(t, total, uint64(64<<40), "less than 64Ti of memory")
	assert.Positive(t, *n.Memory.WorkingSetBytes)
	assert.True(t, n.StartTime.Before(&n.CPU.Time), "booted before now")
	assert.Positive(t, *n.Fs.CapacityBytes)
	assert.Positive(t, *n.Rlimit.MaxPID)

	// The summaries themselves use CPU: the node's rate, from the last
	// two samples, becomes positive.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err = p.Summary(context.Background(), true)
		require.NoError(t, err)
		if r := s.Node.CPU.UsageNanoCores; r != nil && *r > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no CPU rate for the node: %+v", s.Node.CPU)
		}
	}
}
