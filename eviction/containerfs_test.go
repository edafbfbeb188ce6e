package eviction_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/eviction"
)

// TestContainerFsThresholds pins upstream's UpdateContainerFsThresholds:
// which thresholds containerfs copies on each layout of the runtime's
// filesystems, and what happens to configured ones.
func TestContainerFsThresholds(t *testing.T) {
	const (
		hard  = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<6%"
		soft  = "nodefs.available<20%,imagefs.available<30%"
		grace = "nodefs.available=1m,imagefs.available=2m"
	)
	cases := []struct {
		name                         string
		hard, soft, grace, min       string
		dedicated, split             bool
		wantAdded, wantIgnored       []string
		wantUnchanged                bool
		wantMinReclaimOfContainerAvl string
	}{{
		name: "one disk: nodefs's", hard: hard, soft: soft, grace: grace,
		wantAdded: []string{"containerfs.available<10%", "containerfs.available<20% (grace 1m0s)", "containerfs.inodesFree<5%"},
	}, {
		name: "split onto nodefs: nodefs's", hard: hard, soft: soft, grace: grace, dedicated: true, split: true,
		wantAdded: []string{"containerfs.available<10%", "containerfs.available<20% (grace 1m0s)", "containerfs.inodesFree<5%"},
	}, {
		name: "dedicated imagefs with the layers: imagefs's", hard: hard, soft: soft, grace: grace, dedicated: true,
		wantAdded: []string{"containerfs.available<15%", "containerfs.available<30% (grace 2m0s)", "containerfs.inodesFree<6%"},
	}, {
		name: "split from an imagefs on nodefs: left as configured", hard: hard + ",containerfs.available<1Gi", split: true,
		wantUnchanged: true,
	}, {
		name: "configured ones are ignored, replaced in place", hard: "containerfs.available<50%,nodefs.available<10%",
		soft: "containerfs.inodesFree<1%", grace: "containerfs.inodesFree=1m",
		wantAdded:   []string{"containerfs.available<10%"},
		wantIgnored: []string{"containerfs.available<50%", "containerfs.inodesFree<1% (grace 1m0s)"},
	}, {
		name: "minimum reclaim is copied", hard: "nodefs.available<10%", min: "nodefs.available=1Gi",
		wantAdded: []string{"containerfs.available<10%"}, wantMinReclaimOfContainerAvl: "1Gi",
	}, {
		name: "no source, no copy", hard: "memory.available<100Mi",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := mustParse(t, tc.hard, tc.soft, tc.grace, tc.min)
			before := strings.Join(thresholdStrings(ts), " ")
			out, ignored := eviction.ContainerFsThresholds(ts, tc.dedicated, tc.split)
			assert.Equal(t, before, strings.Join(thresholdStrings(ts), " "), "the input is not changed")
			if tc.wantUnchanged {
				assert.Equal(t, thresholdStrings(ts), thresholdStrings(out))
				assert.Empty(t, ignored)
				return
			}
			var kept, added []string
			for _, th := range out {
				if strings.HasPrefix(string(th.Signal), "containerfs.") {
					added = append(added, th.String())
					if tc.wantMinReclaimOfContainerAvl != "" && th.Signal == eviction.SignalContainerFsAvailable {
						assert.Equal(t, tc.wantMinReclaimOfContainerAvl, th.MinReclaim.String())
					}
				} else {
					kept = append(kept, th.String())
				}
			}
			var others []string
			for _, th := range ts {
				if !strings.HasPrefix(string(th.Signal), "containerfs.") {
					others = append(others, th.String())
				}
			}
			assert.Equal(t, others, kept, "the other thresholds stay, in order")
			assert.Equal(t, tc.wantAdded, added)
			assert.Equal(t, tc.wantIgnored, thresholdStrings(ignored))
		})
	}
}

func thresholdStrings(ts []eviction.Threshold) []string {
	var out []string
	for _, th := range ts {
		out = append(out, th.String())
	}
	return out
}
